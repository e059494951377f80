"""Loading a config file with ``--cfg-options`` overrides."""

import os.path as osp

from mmengine.config import Config
from mmengine.logging import print_log


def load_config(
    config: str,
    cfg_options: dict | None = None,
    allow_new_keys: bool = False,
) -> Config:
    """Read a config file and apply ``--cfg-options`` overrides.

    The file is read with :func:`mmssl.utils.config_compat.load_config_file`
    (``mmpretrain::`` bases work without ``pkg_resources``) and the
    overrides merged with :func:`mmssl.utils.config.merge_cfg_options`,
    as tools/train.py does: a key the config lacks is an error unless
    ``allow_new_keys``. Notes are logged as warnings.

    Raises:
        FileNotFoundError: when ``config`` is not a file.
        UnknownConfigKeyError, IndexError, TypeError: for a bad key, see
            :func:`mmssl.utils.config.merge_cfg_options`.
    """
    from .config import merge_cfg_options
    from .config_compat import load_config_file

    if not osp.isfile(config):
        raise FileNotFoundError(f'Config file not found: {config}')
    cfg = load_config_file(config)
    if cfg_options:
        from .setup_env import register_all_modules

        register_all_modules()  # the key check looks classes up
    for note in merge_cfg_options(cfg, cfg_options, allow_new_keys):
        print_log(note, logger='current', level=30)
    return cfg
