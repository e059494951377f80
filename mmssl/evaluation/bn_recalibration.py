"""Re-estimate BatchNorm running statistics on data, weights untouched.

A network at random init has BatchNorm running statistics of 0 mean and
unit variance, which do not fit any real data; a few hundred training
steps replace them with the data's own, even at learning rate 0. A kNN
gain of a trained network over random init can therefore be BatchNorm
statistics and not learning. Re-estimating the statistics of the random
network on the training images gives the baseline that separates the two
("precise BN", Wu & Johnson, Rethinking "Batch" in BatchNorm, 2021,
https://arxiv.org/abs/2105.07576).

Every BatchNorm layer normalises with its batch statistics during the
pass (train mode, as in training); all other layers are in eval mode
(no dropout or drop-path), no gradient is computed and no parameter
changes. Each layer's running mean / variance become the exact mean /
unbiased variance of its inputs over all the images passed, pooled from
the per-batch statistics BatchNorm itself computes (so any subclass,
sparse or not, is handled). PyTorch's cumulative average
(``momentum=None``) is not used: it averages the per-batch variances,
which misses the spread of the batch means and weighs a short last batch
like a full one.
"""

from typing import Callable, Iterable

import torch
from torch.nn.modules.batchnorm import _BatchNorm

from mmssl.engine.runner.feature_extraction import batch_features


def batchnorm_layers(model: torch.nn.Module) -> list:
    """``[(name, module)]`` of every BatchNorm that keeps running stats."""
    return [
        (name, m)
        for name, m in model.named_modules()
        if isinstance(m, _BatchNorm) and m.track_running_stats
    ]


class _Pooled:
    """Per-channel count, mean and sum of squared deviations (Chan et al.)."""

    def __init__(self) -> None:
        self.n = 0
        self.mean = None
        self.m2 = None

    def add(self, n: int, mean: torch.Tensor, var: torch.Tensor) -> None:
        """Add a batch of ``n`` values per channel (``var`` unbiased)."""
        mean = mean.double()
        m2 = var.double() * max(n - 1, 0)
        if self.n == 0:
            self.n, self.mean, self.m2 = n, mean, m2
            return
        total = self.n + n
        delta = mean - self.mean
        self.mean = self.mean + delta * (n / total)
        self.m2 = self.m2 + m2 + delta**2 * (self.n * n / total)
        self.n = total

    def var(self) -> torch.Tensor:
        return self.m2 / max(self.n - 1, 1)


@torch.no_grad()
def recalibrate_batchnorm(
    model: torch.nn.Module,
    batches: Iterable[dict],
    feature_fn: Callable | None = None,
) -> dict:
    """Set every BatchNorm's running stats to those of ``batches``.

    Args:
        model: an mmengine ``BaseModel`` (possibly wrapped by DDP); each
            batch goes through its data preprocessor and
            ``model(inputs, mode='tensor')`` (or ``feature_fn``), the
            forward that kNN features come from.
        batches: collated data batches (e.g. a dataloader).
        feature_fn: as in :func:`batch_features`.

    Returns:
        dict: ``layers`` (BatchNorm layers recalibrated), ``unused``
        (names of those the forward never reached, left as they were),
        ``batches`` and ``images`` passed.

    Raises:
        ValueError: the model has no BatchNorm layer with running stats,
            or ``batches`` is empty.
    """
    layers = batchnorm_layers(model)
    if not layers:
        raise ValueError(
            f'{type(model).__name__} has no BatchNorm layer with running '
            'statistics: there is nothing to recalibrate; drop the '
            'recalibration flag for this model.'
        )
    pooled = {m: _Pooled() for _, m in layers}

    def add(module, args, output) -> None:
        # with momentum 1 the running stats are this call's batch stats
        x = args[0]
        n = x.numel() // x.shape[1]
        pooled[module].add(n, module.running_mean, module.running_var)

    saved = [(m, m.momentum, m.training) for _, m in layers]
    was_training = model.training
    hooks = [m.register_forward_hook(add) for _, m in layers]
    n_batches = n_images = 0
    try:
        model.eval()
        for _, m in layers:
            m.train()
            m.momentum = 1.0  # running stats := this batch's stats
        for batch in batches:
            batch_features(model, batch, feature_fn)
            n_batches += 1
            n_images += len(batch['inputs'])
    finally:
        for hook in hooks:
            hook.remove()
        for m, momentum, training in saved:
            m.momentum = momentum
            m.train(training)
        model.train(was_training)
    if not n_batches:
        raise ValueError(
            'no batch to recalibrate BatchNorm on: the recalibration data '
            'is empty; check its folder.'
        )
    unused = []
    for name, m in layers:
        stats = pooled[m]
        if stats.n == 0:
            unused.append(name)
            continue
        m.running_mean.copy_(stats.mean.to(m.running_mean.dtype))
        m.running_var.copy_(stats.var().to(m.running_var.dtype))
        m.num_batches_tracked.fill_(n_batches)
    return dict(
        layers=len(layers) - len(unused),
        unused=unused,
        batches=n_batches,
        images=n_images,
    )
