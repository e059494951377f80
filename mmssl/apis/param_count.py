"""Counting the parameters of an algorithm, its parts and its blocks.

Used by ``tools/analysis_tools/count_parameters.py``. Large models can be
built on the ``meta`` device (:func:`build_on_meta`), which allocates no
memory, so counting a ViT-g takes a fraction of a second.
"""

from dataclasses import dataclass
from typing import Iterable

import torch
from torch import nn


@dataclass
class ParamRow:
    """One line of a parameter table.

    Attributes:
        name (str): Dotted module name (``''`` for the whole model).
        total (int): Number of parameter elements (shared ones counted once).
        trainable (int): Number of elements with ``requires_grad=True``.
        depth (int): Nesting level, 0 for the whole model; for indentation.
        note (str): Extra information, e.g. the module's class or preset.
    """

    name: str
    total: int
    trainable: int
    depth: int = 0
    note: str = ''


def count_params(
    params: nn.Module | Iterable[nn.Parameter],
) -> tuple[int, int]:
    """Total and trainable numbers of parameter elements.

    Parameters shared between modules (the same tensor object reachable
    twice) are counted once.

    Args:
        params (nn.Module | Iterable[nn.Parameter]): A module (all of its
            parameters, recursively) or an iterable of parameters.

    Returns:
        tuple[int, int]: ``(total, trainable)``.
    """
    if isinstance(params, nn.Module):
        params = params.parameters()
    seen: set[int] = set()
    total = trainable = 0
    for p in params:
        if id(p) in seen:
            continue
        seen.add(id(p))
        total += p.numel()
        if p.requires_grad:
            trainable += p.numel()
    return total, trainable


def find_blocks(module: nn.Module) -> list[tuple[str, nn.Module]]:
    """The repeated blocks (stages or layers) of a backbone, in order.

    Looks for, in this order: ResNet-style ``res_layers`` names, then the
    direct ``nn.ModuleList`` / ``nn.Sequential`` children named ``blocks``,
    ``layers`` or ``stages``, then any direct ``nn.ModuleList`` child.

    Args:
        module (nn.Module): Usually a backbone.

    Returns:
        list[tuple[str, nn.Module]]: ``(dotted name relative to module,
        block)``; empty when no block list is found.
    """
    names = getattr(module, 'res_layers', None)
    if isinstance(names, (list, tuple)) and all(
        isinstance(n, str) and hasattr(module, n) for n in names
    ):
        return [(n, getattr(module, n)) for n in names]
    for attr in ('blocks', 'layers', 'stages'):
        child = getattr(module, attr, None)
        if isinstance(child, (nn.ModuleList, nn.Sequential)):
            return [(f'{attr}.{i}', m) for i, m in enumerate(child)]
    for name, child in module.named_children():
        if isinstance(child, nn.ModuleList) and len(child) > 0:
            return [(f'{name}.{i}', m) for i, m in enumerate(child)]
    return []


def parameter_table(
    model: nn.Module,
    depth: int = 1,
    per_block: bool = False,
    block_parent: str = 'backbone',
) -> list[ParamRow]:
    """Rows of parameter counts: the model, its parts and optionally blocks.

    Args:
        model (nn.Module): The algorithm (or any module).
        depth (int): Show modules down to this nesting level; 1 lists the
            top-level parts (backbone, neck, head, teacher, ...).
            Defaults to 1.
        per_block (bool): Also list every block of ``block_parent`` (see
            :func:`find_blocks`), each with its own count. Defaults to False.
        block_parent (str): Dotted name of the module whose blocks are
            listed; falls back to the model itself when it has no such
            attribute. Defaults to ``'backbone'``.

    Returns:
        list[ParamRow]: The first row is the whole model (name ``''``).
    """
    if depth < 0:
        raise ValueError(f'depth must be >= 0, got {depth}')
    total, trainable = count_params(model)
    rows = [ParamRow('', total, trainable, 0, type(model).__name__)]

    def visit(mod: nn.Module, prefix: str, level: int) -> None:
        if level > depth:
            return
        for name, child in mod.named_children():
            full = f'{prefix}.{name}' if prefix else name
            t, tr = count_params(child)
            rows.append(ParamRow(full, t, tr, level, type(child).__name__))
            visit(child, full, level + 1)

    visit(model, '', 1)
    if per_block:
        parent, parent_name = model, ''
        try:
            parent = model.get_submodule(block_parent)
            parent_name = block_parent
        except AttributeError:
            pass
        blocks = find_blocks(parent)
        if not blocks:
            raise ValueError(
                f'--per-block: found no list of blocks in '
                f'{type(parent).__name__} ("{parent_name or "model"}"); '
                'use --depth N to look inside it instead.'
            )
        for name, block in blocks:
            full = f'{parent_name}.{name}' if parent_name else name
            t, tr = count_params(block)
            rows.append(
                ParamRow(full, t, tr, 2, f'block: {type(block).__name__}')
            )
    return rows


def human_count(n: int) -> str:
    """Short human form: ``21.7M``, ``1.14B``, ``3.2K``."""
    for unit, scale in (('B', 1e9), ('M', 1e6), ('K', 1e3)):
        if abs(n) >= scale:
            return f'{n / scale:.2f}{unit}'
    return str(n)


def format_table(rows: list[ParamRow], title: str = '') -> str:
    """A plain-text table of :class:`ParamRow`."""
    header = ('module', 'type', 'params', 'trainable', 'exact')
    lines = []
    body = []
    for r in rows:
        name = '  ' * max(r.depth - 1, 0) + (r.name or '(whole model)')
        body.append(
            (
                name,
                r.note,
                human_count(r.total),
                human_count(r.trainable),
                f'{r.total:,}',
            )
        )
    widths = [max(len(x[i]) for x in body + [header]) for i in range(5)]
    fmt = '  '.join(
        '{:<%d}' % w if i < 2 else '{:>%d}' % w for i, w in enumerate(widths)
    )
    if title:
        lines.append(title)
    lines.append(fmt.format(*header))
    lines.append('  '.join('-' * w for w in widths))
    lines.extend(fmt.format(*x) for x in body)
    return '\n'.join(lines)


def build_on_meta(build_fn, *args, meta: bool = True, **kwargs):
    """Call ``build_fn(*args, **kwargs)`` with ``meta`` as default device.

    Tensors created during construction live on the ``meta`` device: no
    memory is allocated and no initialisation maths runs, but shapes (and
    thus parameter counts) are exact. If the build fails on ``meta`` (a
    module computing values in ``__init__``), it is retried on the CPU.

    Args:
        build_fn (callable): E.g. ``MODELS.build``.
        meta (bool): Try the meta device first. Defaults to True.

    Returns:
        The built object.
    """
    if meta:
        try:
            with torch.device('meta'):
                return build_fn(*args, **kwargs)
        except Exception:  # noqa: BLE001 - retried on the CPU below
            pass
    return build_fn(*args, **kwargs)


#: Backbone presets reported by ``count_parameters.py --presets``:
#: ``(label, backbone config, published size in parameters)``. The sizes
#: are those of the released DINOv2 models at 518 px (22.1M, 86.6M, 304.4M,
#: 1136.5M as listed by timm), which the DINOv2 paper rounds to 21M, 86M,
#: 300M and 1.1B; the 14-px patch and 37x37 position table are included.
VIT_PRESETS: list[tuple[str, dict, float]] = [
    (
        'ViT-S/14 (dinov2-s)',
        dict(
            type='VisionTransformer',
            arch='dinov2-s',
            patch_size=14,
            img_size=518,
        ),
        22.1e6,
    ),
    (
        'ViT-B/14 (b)',
        dict(type='VisionTransformer', arch='b', patch_size=14, img_size=518),
        86.6e6,
    ),
    (
        'ViT-L/14 (l)',
        dict(type='VisionTransformer', arch='l', patch_size=14, img_size=518),
        304.4e6,
    ),
    (
        'ViT-g/14 (dinov2-g)',
        dict(
            type='VisionTransformer',
            arch='dinov2-g',
            patch_size=14,
            img_size=518,
        ),
        1136.5e6,
    ),
]


def dino_vit_presets() -> list[tuple[str, dict, float]]:
    """Presets of mmssl's ``DINOVisionTransformer``, when it is registered.

    Returns an empty list when the backbone is not available (yet).
    """
    from mmssl.registry import MODELS

    if MODELS.get('DINOVisionTransformer') is None:
        return []
    sizes = dict(small=22.1e6, base=86.6e6, large=304.4e6, giant=1136.5e6)
    return [
        (
            f'DINOVisionTransformer ({a})',
            dict(
                type='DINOVisionTransformer',
                arch=a,
                patch_size=14,
                img_size=518,
            ),
            s,
        )
        for a, s in sizes.items()
    ]
