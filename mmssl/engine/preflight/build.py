"""Build the runner a training run will use, and refuse what cannot train.

:func:`build_train_runner` is the first step of
:func:`mmssl.apis.train` (and of ``tools/train.py --dry-run``, the
fine-tune task of ``tools/eval.py``): config values the build refuses,
a resume that does not fit, too few samples for one batch per process
and an epoch of 0 iterations all stop here with one clear line, before
schedulers, checkpoints or collectives are set up.
"""

import logging
import os
from typing import Any, List, Optional, Tuple

from mmengine.config import Config

from mmssl.engine.resume.options import check_resume_fits
from mmssl.errors import BUILD_ERRORS, TrainConfigError, config_build_error

from .data_check import (
    TooFewSamplesError,
    check_memory_size,
    check_train_dataloader,
)
from .val_data import val_warning_lines


def build_train_runner(
    cfg: Config, notes: Optional[List[Tuple[int, str]]] = None
) -> Any:
    """Build the runner and its train loop; refuse an empty epoch.

    With ``randomness.deterministic``, ops without a deterministic kernel
    warn instead of stopping training. The ``notes`` of
    :func:`mmssl.apis.prepare_train_cfg` go to the run's log.

    Raises:
        TrainConfigError: Fewer samples than one batch per process.
    """
    import torch

    from mmssl.config.options import UnknownConfigKeyError
    from mmssl.engine.runner import build_runner

    notes = list(notes or [])
    try:
        runner = build_runner(cfg)
    except UnknownConfigKeyError as exc:
        raise TrainConfigError(str(exc)) from exc
    except BUILD_ERRORS as exc:  # a value the build refused: one line
        raise config_build_error(exc, cfg) from exc
    check_resume_fits(runner)
    if (cfg.get('randomness') or {}).get('deterministic'):
        # mmengine enabled strict mode; many vision ops (e.g. the CUDA
        # backward of adaptive average pooling) have no deterministic
        # kernel and would stop training, so they warn instead.
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        workspace = os.environ.get('CUBLAS_WORKSPACE_CONFIG')
        notes.append(
            (
                logging.INFO,
                '--deterministic: cuDNN deterministic, benchmark off, '
                f'CUBLAS_WORKSPACE_CONFIG={workspace}, deterministic '
                'algorithms (warn where none exists)',
            )
        )
    for level, line in notes:
        runner.logger.log(level, line)
    for line in val_warning_lines(cfg):
        runner.logger.warning(line)
    # Build the loop (and dataloader) now to refuse an empty epoch before
    # schedulers, checkpoints or collectives are set up.
    try:
        runner._train_loop = runner.build_train_loop(runner._train_loop)
    except FileNotFoundError as exc:  # a data_root, ann_file, cache ...
        raise TrainConfigError(str(exc)) from exc
    try:
        iters = check_train_dataloader(
            runner.train_dataloader, runner.world_size
        )
        check_memory_size(runner.model, runner.train_dataloader)
    except TooFewSamplesError as exc:
        runner.logger.error(str(exc))
        raise TrainConfigError(str(exc), exit_code=1) from exc
    runner.logger.info(
        f'{iters} iterations per epoch on each of '
        f'{runner.world_size} process(es)'
    )
    return runner
