"""The ``--cfg-options`` arguments and config loading of every tool.

All command-line tools (tools/train.py, tools/test.py, the analysis and
misc tools) read ``--cfg-options`` with the same parser,
:class:`mmssl.config.values.CfgOptionsAction` (Python literals, lists,
tuples and nested ``dict(...)`` read with ``ast``, nothing evaluated), and
merge them with the same checks (:func:`merge_cfg_options`: a key the
config does not have is an error with a did-you-mean, unless
``--allow-new-keys``).
"""

import argparse
import sys
from typing import Any, Optional

from .values import CfgOptionsAction

CFG_OPTIONS_HELP = (
    'override config entries, KEY=VALUE (dotted keys, list indices, '
    "Python literals such as [1, 2], (1, 2), dict(a=dict(b=1)) or 'str'); "
    'unknown keys are an error'
)


def add_cfg_options_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--cfg-options`` and ``--allow-new-keys`` to ``parser``.

    Args:
        parser (argparse.ArgumentParser): The tool's parser.
    """
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        action=CfgOptionsAction,
        metavar='KEY=VALUE',
        help=CFG_OPTIONS_HELP,
    )
    parser.add_argument(
        '--allow-new-keys',
        action='store_true',
        help='let --cfg-options add keys the config does not have',
    )


def load_tool_config(
    config: str,
    cfg_options: Optional[dict] = None,
    allow_new_keys: bool = False,
) -> Any:
    """Read a config file and apply ``--cfg-options``; exit on a bad key.

    ``mmpretrain::`` bases work without ``pkg_resources``
    (:func:`mmssl.config.reading.load_config_file`). Notes (a new
    key added, a config variable whose copies keep the old value) are
    logged as warnings.

    Args:
        config (str): Config file.
        cfg_options (dict, optional): Parsed ``--cfg-options``.
        allow_new_keys (bool): Accept keys the config lacks.

    Returns:
        mmengine.Config: The config.

    Raises:
        SystemExit: (status 2) for a missing file or a bad key, with the
            message on stderr.
    """
    from .options import UnknownConfigKeyError
    from .reading import load_config

    try:
        return load_config(config, cfg_options, allow_new_keys)
    except (
        FileNotFoundError,
        UnknownConfigKeyError,
        IndexError,
        TypeError,
    ) as exc:
        print(f'error: {exc}', file=sys.stderr, flush=True)
        raise SystemExit(2) from None
