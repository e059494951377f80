"""Loading a config file with ``--cfg-options`` overrides."""

import os.path as osp

from mmengine.config import Config


def load_config(config: str, cfg_options: dict | None = None) -> Config:
    """``Config.fromfile`` plus ``--cfg-options`` overrides."""
    if not osp.isfile(config):
        raise FileNotFoundError(f'Config file not found: {config}')
    cfg = Config.fromfile(config)
    if cfg_options:
        cfg.merge_from_dict(cfg_options)
    return cfg
