"""Activation checkpointing of one block: whole, or selective by op.

``with_cp=True`` (or ``'full'``) keeps only a block's input and recomputes
all of its forward during backward. ``with_cp='selective'`` keeps the
outputs of the expensive ops (matrix multiplications and
scaled-dot-product attention) and recomputes only the cheap ones (norms,
activations, additions, dropout, reshapes), trading a little memory for
much less recomputation (Korthikanti et al., *Reducing Activation
Recomputation in Large Transformer Models*, 2022,
https://arxiv.org/abs/2205.05198). The selection uses torch's
``create_selective_checkpoint_contexts`` (torch >= 2.4).
"""

import functools
from typing import Callable, Union

import torch
import torch.utils.checkpoint as cp

#: ``with_cp`` values and what they do.
CP_MODES = (False, True, 'full', 'selective')


def _save_ops() -> frozenset:
    """ATen ops whose outputs the selective policy keeps."""
    aten = torch.ops.aten
    names = (
        'mm',
        'addmm',
        'bmm',
        'baddbmm',
        '_scaled_dot_product_flash_attention',
        '_scaled_dot_product_flash_attention_for_cpu',
        '_scaled_dot_product_efficient_attention',
        '_scaled_dot_product_cudnn_attention',
    )
    ops = set()
    for name in names:
        packet = getattr(aten, name, None)
        if packet is not None:
            ops.add(packet.default)
    return frozenset(ops)


def selective_cp_available() -> bool:
    """Whether this torch has per-op (selective) checkpointing."""
    return hasattr(cp, 'create_selective_checkpoint_contexts') and hasattr(
        cp, 'CheckpointPolicy'
    )


def check_cp_mode(with_cp: Union[bool, str]) -> Union[bool, str]:
    """Validate a ``with_cp`` value.

    Raises:
        ValueError: An unknown value, or ``'selective'`` on a torch
            without ``create_selective_checkpoint_contexts``.
    """
    if with_cp not in (False, True) and with_cp not in CP_MODES[2:]:
        raise ValueError(
            f'with_cp={with_cp!r} is not one of {CP_MODES}: True or '
            "'full' checkpoints whole blocks, 'selective' keeps matmul and "
            'attention outputs and recomputes the rest.'
        )
    if with_cp == 'selective' and not selective_cp_available():
        raise ValueError(
            "with_cp='selective' needs torch >= 2.4 "
            '(torch.utils.checkpoint.create_selective_checkpoint_contexts); '
            f'this is torch {torch.__version__}. Use with_cp=True.'
        )
    return with_cp


@functools.lru_cache(maxsize=None)
def _selective_context_fn() -> Callable:
    save = _save_ops()

    def policy(ctx, op, *args, **kwargs):
        if op in save:
            return cp.CheckpointPolicy.MUST_SAVE
        return cp.CheckpointPolicy.PREFER_RECOMPUTE

    return functools.partial(cp.create_selective_checkpoint_contexts, policy)


def checkpoint_block(
    fn: Callable, *args, with_cp: Union[bool, str] = True
) -> torch.Tensor:
    """``fn(*args)`` under non-reentrant activation checkpointing.

    Non-reentrant checkpointing is DDP- and FSDP2-safe also when a block
    runs several times per step (several crops).

    Args:
        fn (Callable): The block (or a function running it).
        *args: Its inputs.
        with_cp (bool | str): ``True``/``'full'`` or ``'selective'``
            (see the module docstring).

    Returns:
        torch.Tensor: ``fn(*args)``.
    """
    if with_cp == 'selective':
        return cp.checkpoint(
            fn,
            *args,
            use_reentrant=False,
            context_fn=_selective_context_fn(),
        )
    return cp.checkpoint(fn, *args, use_reentrant=False)
