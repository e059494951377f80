"""Which parameters one gradient-norm clip covers (``clip_grad.scope``)."""

from typing import Dict, List

import torch

#: ``clip_grad=dict(max_norm=..., scope=...)`` values
CLIP_SCOPES = ('global', 'module', 'tensor')


def check_scope(scope: str) -> str:
    """Return ``scope`` or raise a ``ValueError`` that lists the choices."""
    if scope not in CLIP_SCOPES:
        raise ValueError(
            f'optim_wrapper.clip_grad.scope must be one of {CLIP_SCOPES}, '
            f'got {scope!r}: "module" clips each top-level student module '
            '(backbone, head, ...) on its own as dinov2/dinov3 do, "tensor" '
            'each parameter tensor as DINO v1 does, "global" one norm over '
            'all parameters.'
        )
    return scope


def clip_groups(
    optimizer: torch.optim.Optimizer, scope: str
) -> Dict[str, List[torch.Tensor]]:
    """Parameters with a gradient, grouped as ``scope`` clips them.

    Args:
        optimizer (Optimizer): Its groups name their parameters
            (``param_names`` or ``param_name``, as
            ``LayerDecayOptimWrapperConstructor`` writes them) when
            ``scope='module'``.
        scope (str): ``'global'`` (one group ``'all'``), ``'module'``
            (one group per first name component: ``backbone``, ``head``,
            ``patch_head``...) or ``'tensor'`` (one group per parameter).

    Returns:
        dict[str, list[Tensor]]: Group name -> parameters, in the
        optimizer's order.
    """
    groups: Dict[str, List[torch.Tensor]] = {}
    for i, group in enumerate(optimizer.param_groups):
        names = group.get('param_names', group.get('param_name'))
        if isinstance(names, str):
            names = [names] * len(group['params'])
        if scope == 'module' and not names:
            raise ValueError(
                'clip_grad scope="module" needs named parameter groups: '
                "use constructor='LayerDecayOptimWrapperConstructor' (it "
                'names them), or clip_grad.scope="global" / "tensor".'
            )
        for j, p in enumerate(group['params']):
            if p.grad is None or not p.requires_grad:
                continue
            if scope == 'global':
                key = 'all'
            elif scope == 'module':
                key = names[j].split('.')[0]
            else:
                key = names[j] if names else f'group{i}.{j}'
            groups.setdefault(key, []).append(p)
    return groups
