"""``torch.compile`` per transformer block (the ``compile_blocks`` flag)."""

from typing import Iterable, Union

from torch import nn

#: Arguments of ``torch.compile`` used when ``compile_blocks=True``.
DEFAULT_COMPILE_CFG = dict(dynamic=None)


def compile_blocks(
    layers: Iterable[nn.Module], cfg: Union[bool, dict, None]
) -> None:
    """Compile each block in place with its ``compile`` method.

    ``nn.Module.compile`` compiles a block's whole forward;
    :class:`~mmssl.models.backbones.dino_block.DINOBlock` overrides it to
    compile its residual branches only (its stochastic depth indexes a
    data-dependent subset of samples, which stays eager). The parameter
    names (and so checkpoints) stay those of the eager model. Stochastic
    depth that computes only the kept samples makes the batch size inside
    a block vary from step to step; with ``dynamic=None`` torch recompiles
    once with a dynamic batch size and then reuses that graph
    (``dynamic=True`` does so from the start). Apply before FSDP2's
    ``fully_shard`` (torch's order: compile per block, then shard).

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
