"""The one home of config handling (docs/en/config.md).

Reading (:mod:`.reading`), ``--cfg-options`` values and key checks
(:mod:`.values`, :mod:`.options`, :mod:`.cli`), unknown top-level keys
(:mod:`.keys`), the rewrites of ``tools/train.py`` (:mod:`.rewrite`),
run fractions (:mod:`.run_length`), scheduler steps
(:mod:`.scheduler_steps`), derived sizes (:mod:`.derived_sizes`) and the
one entry that applies them before a build, :func:`resolve`.

This package imports :mod:`mmssl.registry` and nothing above it (no
``apis``, ``engine`` or ``models``).
"""

from .cli import add_cfg_options_arguments
from .derived_sizes import resolve_model_sizes
from .diff import config_differences
from .keys import check_top_level_keys
from .options import UnknownConfigKeyError, merge_cfg_options
from .reading import ConfigFileNotFoundError, load_config
from .resolve import UnresolvedLogProcessor, resolve
from .rewrite import auto_scale_lr_in_cfg, enable_amp_in_cfg
from .run_length import resolve_run_fractions, set_run_length
from .scheduler_steps import schedulers_for_run
from .values import CfgOptionsAction, parse_cfg_value

__all__ = [
    'ConfigFileNotFoundError',
    'CfgOptionsAction',
    'UnknownConfigKeyError',
    'UnresolvedLogProcessor',
    'add_cfg_options_arguments',
    'auto_scale_lr_in_cfg',
    'check_top_level_keys',
    'config_differences',
    'enable_amp_in_cfg',
    'load_config',
    'merge_cfg_options',
    'parse_cfg_value',
    'resolve',
    'resolve_model_sizes',
    'resolve_run_fractions',
    'schedulers_for_run',
    'set_run_length',
]
