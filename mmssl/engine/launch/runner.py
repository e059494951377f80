"""A Runner whose DDP wrapping also works for CPU processes (gloo)."""

import warnings

import torch
from mmengine.model import is_model_wrapper, revert_sync_batchnorm
from mmengine.runner import Runner
from torch import nn

from .dist import cpu_model_wrapper_cfg


def _has_sync_bn(model: nn.Module) -> bool:
    return any('SyncBatchNorm' in type(m).__name__ for m in model.modules())


class CPUAwareRunner(Runner):
    """:class:`mmengine.runner.Runner` that can wrap a CPU model in DDP.

    On GPUs it behaves exactly like ``Runner``. In a distributed run
    without CUDA, PyTorch's DDP refuses ``device_ids`` (mmengine passes
    ``[LOCAL_RANK]``) and refuses SyncBatchNorm layers ("SyncBatchNorm
    layers only work with GPU modules"), which self-supervised necks use
    by default. This runner passes ``device_ids=None`` and turns SyncBN
    layers into BN (per-process statistics) with a warning, so a GPU
    config can be debugged with CPU processes unchanged.
    """

    def wrap_model(self, model_wrapper_cfg, model: nn.Module):
        """Wrap ``model``; adapt to CPU processes first when needed."""
        if (
            self.distributed
            and not torch.cuda.is_available()
            and not is_model_wrapper(model)
        ):
            if _has_sync_bn(model):
                warnings.warn(
                    'CPU distributed training: SyncBatchNorm '
                    'layers become BatchNorm (per-process batch '
                    'statistics).'
                )
                model = revert_sync_batchnorm(model)
            model_wrapper_cfg = cpu_model_wrapper_cfg(
                model_wrapper_cfg,
                self.cfg.get('find_unused_parameters', False),
            )
        return super().wrap_model(model_wrapper_cfg, model)


def build_runner(cfg) -> Runner:
    """Build the runner for ``cfg``.

    ``cfg.runner_type`` (a registered runner) wins, as in mmengine's tools;
    otherwise :class:`CPUAwareRunner`.

    Args:
        cfg (mmengine.Config): The full config.

    Returns:
        Runner: The runner.
    """
    if 'runner_type' in cfg:
        from mmssl.registry import RUNNERS

        return RUNNERS.build(cfg)
    return CPUAwareRunner.from_cfg(cfg)
