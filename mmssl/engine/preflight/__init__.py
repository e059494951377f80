"""Preflight: what is checked and measured before a run trains.

- :mod:`.build`: :func:`build_train_runner`, the runner of a training run
  with every check that can refuse it (config values, resume fit, too few
  samples, an empty epoch);
- :mod:`.data_check`: iterations per epoch and the memory size of
  memory-bank algorithms;
- :mod:`.val_data`: the validation folders of a config;
- :mod:`.dry_run`: ``tools/train.py --dry-run`` (build, report, do not
  train), with :mod:`.step_memory`, the peak memory of one step.
"""

from .build import build_train_runner
from .data_check import (
    TooFewSamplesError,
    check_memory_size,
    check_train_dataloader,
    iterations_per_epoch,
)
from .dry_run import dry_run
from .val_data import check_val_data, val_warning_lines

__all__ = [
    'TooFewSamplesError',
    'build_train_runner',
    'check_memory_size',
    'check_train_dataloader',
    'check_val_data',
    'dry_run',
    'iterations_per_epoch',
    'val_warning_lines',
]
