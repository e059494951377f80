"""``torch.compile`` per transformer block (the ``compile_blocks`` flag)."""

from typing import Iterable, Union

from torch import nn

#: Arguments of ``torch.compile`` used when ``compile_blocks=True``.
DEFAULT_COMPILE_CFG = dict(dynamic=None)


def compile_blocks(
    layers: Iterable[nn.Module], cfg: Union[bool, dict, None]
) -> None:
    """Compile each whole block in place with its ``compile`` method.

    ``nn.Module.compile`` compiles a block's whole forward, attention and
    FFN branches, norms and residual additions in one graph; the
    parameter names (and so checkpoints) stay those of the eager model.
    :class:`~mmssl.models.layers.DINOBlock` takes the samples its
    stochastic depth keeps from the backbone as tensors: with
    ``drop_path_mode='static'`` their number is fixed, so after one
    graph per crop size, grad mode and train/eval state nothing
    recompiles (the ``'bernoulli'`` count changes every call; with
    ``dynamic=None`` torch then recompiles once with a dynamic count). A
    deep copy of a block (the EMA teacher) is compiled again. Apply
    before FSDP2's ``fully_shard`` (torch's order: compile per block,
    then shard).

    Args:
        layers (Iterable[nn.Module]): The blocks.
        cfg (bool | dict | None): False/None: eager. True: compile with
            :data:`DEFAULT_COMPILE_CFG`. A dict: ``torch.compile`` keyword
            arguments (``backend``, ``mode``, ``dynamic``, ...).
    """
    if not cfg:
        return
    kwargs = dict(DEFAULT_COMPILE_CFG)
    if isinstance(cfg, dict):
        kwargs.update(cfg)
    for layer in layers:
        layer.compile(**kwargs)
