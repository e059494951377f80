# Copyright (c) mmssl contributors. All rights reserved.
"""Warm start of a DINO-family algorithm from an official backbone.

``model.warm_start=dict(checkpoint=..., format='auto')`` on DINO, iBOT,
DINOv2 (and DINOv3) calls :func:`apply_warm_start` at the end of the
algorithm's ``init_weights``. Formats (``format='auto'`` tells them apart
by their key names, see :func:`detect_format`):

==============  =========================================================
``dinov2``      facebookresearch/dinov2 hub ``.pth`` (``blocks.N.*``,
                ``mask_token``); training files with ``teacher.backbone.``
``timm``        timm ViT state dict (DINOv2 block names, no ``mask_token``)
``timm_dinov3`` timm DINOv3 RoPE ViT (``eva.py``, ``vit_*_dinov3[_qkvb]``:
                ``reg_token``, ``gamma_1``, no ``pos_embed``)
``hf_dinov2``   HF transformers ``Dinov2Model`` (``.safetensors`` / ``.bin``)
``dinov3``      facebookresearch/dinov3 hub ``.pth`` (``storage_tokens``,
                ``rope_embed.periods``)
``hf_dinov3``   HF transformers ``DINOv3ViTModel`` (files, or a live
                model's ``model.layer.N`` names); the RoPE base is read
                from ``config.json`` beside the weights when it is there
``mmssl``       an mmssl backbone, or the backbone of an mmssl algorithm
                checkpoint (teacher first)
``mmssl_full``  an mmssl algorithm checkpoint, loaded whole: student,
                teacher, heads and loss buffers (chaining of stages; never
                chosen by ``'auto'``)
==============  =========================================================

For the backbone formats the converted weights go into the student
backbone, then into the teacher backbone; the heads keep their fresh
initialisation. The patch embedding may grow from 3 to C input channels
(the new channels start from the mean of the old ones), and a position
embedding of another grid is resized bicubically. A :class:`LoadReport` is
logged, and :class:`WarmStartError` stops the run when fewer than
``min_match`` of the backbone tensors were loaded.

The schedule keys (``head_iters``, ``unfreeze``, ``ramp_iters``) are read
by ``WarmStartHook`` (mmssl.engine.hooks); the runner adds it to
``custom_hooks`` when they are set.
"""

import importlib
import os.path as osp
from typing import Any, Callable, Dict, Mapping, Optional

import torch
from mmengine.logging import print_log
from torch import nn

from .io import load_checkpoint
from .layouts.dinov2 import DINOV2_MARKER, MMSSL_MARKER, dinov2_to_mmssl
from .layouts.hf_dinov2 import HF_DINOV2_MARKER, hf_dinov2_to_mmssl
from .layouts.pos_embed import resize_pos_embed, square_grid
from .layouts.timm import (
    is_timm_dinov3,
    timm_dinov3_to_dinov3,
    timm_to_dinov2,
)
from .pretrained import LoadReport, load_pretrained
from .state_dict import (
    backbone_prefixes,
    describe_network,
    find_backbone_prefix,
    strip_prefix,
    unwrap_state_dict,
)

StateDict = Dict[str, torch.Tensor]

FORMATS = (
    'auto',
    'dinov2',
    'timm',
    'timm_dinov3',
    'hf_dinov2',
    'dinov3',
    'hf_dinov3',
    'mmssl',
    'mmssl_full',
)
#: Keys of ``model.warm_start`` (the schedule ones are WarmStartHook's).
WARM_START_KEYS = (
    'checkpoint',
    'format',
    'min_match',
    'prefix',
    'network',
    'trusted',
    'head_iters',
    'unfreeze',
    'ramp_iters',
)
SCHEDULE_KEYS = ('head_iters', 'unfreeze', 'ramp_iters')
#: (format, key suffix that marks its backbone), checked in this order.
_MARKERS = (
    ('dinov3', 'storage_tokens'),
    ('hf_dinov3', 'embeddings.patch_embeddings.weight'),
    ('hf_dinov2', HF_DINOV2_MARKER),
    # an mmssl DINOv3ViT has rope_embed.periods too: mmssl first
    ('mmssl', MMSSL_MARKER),
    ('dinov3', 'rope_embed.periods'),
    ('dinov2', DINOV2_MARKER),
)
_DINOV3_MODULE = 'mmssl.checkpoint.layouts.dinov3'


class WarmStartError(RuntimeError):
    """A warm start that would silently train (mostly) from scratch."""


def read_weights(path: str, trusted: Optional[bool] = None) -> StateDict:
    """The tensors of a ``.pth`` / ``.bin`` (safe loader) or ``.safetensors``.

    Raises:
        ImportError: A ``.safetensors`` file without the package.
    """
    if path.endswith('.safetensors'):
        try:
            from safetensors.torch import load_file
        except ImportError as err:
            raise ImportError(
                f'Reading {path} needs the safetensors package: '
                "pip install 'mmssl[safetensors]' (or pip install "
                'safetensors).'
            ) from err
        if not osp.isfile(path):
            raise FileNotFoundError(f'warm_start checkpoint {path} not found')
        return dict(load_file(path, device='cpu'))
    return unwrap_state_dict(load_checkpoint(path, trusted=trusted))


def detect_format(keys) -> str:
    """The format of a state dict, from its key names (see module doc).

    Raises:
        WarmStartError: No known backbone layout.
    """
    keys = list(keys)
    for fmt, marker in _MARKERS:
        if any(k == marker or k.endswith('.' + marker) for k in keys):
            if fmt == 'dinov2' and not any(
                k.endswith('mask_token') for k in keys
            ):
                # timm drops DINOv2's mask_token; its DINOv3 models
                # (eva.py) have no pos_embed and EVA's gamma_1
                return 'timm_dinov3' if is_timm_dinov3(keys) else 'timm'
            return fmt
    raise WarmStartError(
        f'Cannot tell the checkpoint format from its keys (first: '
        f'{keys[:5]}). Give warm_start.format, one of {FORMATS[1:]}.'
    )


def _dinov2_layout(sd: Mapping) -> StateDict:
    """DINOv2 hub keys -> mmssl; unknown keys kept (reported unexpected)."""
    out = dinov2_to_mmssl(sd, strict=False)
    for key, value in sd.items():
        if key.startswith('head.'):
            continue
        if not dinov2_to_mmssl({key: value}, strict=False):
            out[key] = value
    return out


def _dinov3_converter(fmt: str) -> Callable:
    """``dinov3_to_mmssl`` / ``hf_dinov3_to_mmssl``, imported when needed."""
    name = {
        'hf_dinov3': 'hf_dinov3_to_mmssl',
        'rope': 'hf_dinov3_rope_periods',
    }.get(fmt, 'dinov3_to_mmssl')
    try:
        module = importlib.import_module(_DINOV3_MODULE)
    except ImportError as err:
        raise WarmStartError(
            f'warm_start format {fmt!r} needs {_DINOV3_MODULE} (the DINOv3 '
            'key layouts), which this mmssl does not have; update mmssl.'
        ) from err
    if not hasattr(module, name):
        raise WarmStartError(f'{_DINOV3_MODULE} has no {name}().')
    return getattr(module, name)


_MARKER_OF = {
    'dinov2': DINOV2_MARKER,
    'timm': DINOV2_MARKER,
    'timm_dinov3': DINOV2_MARKER,
    'hf_dinov2': HF_DINOV2_MARKER,
    'mmssl': MMSSL_MARKER,
    'dinov3': 'patch_embed.proj.weight',
    'hf_dinov3': 'embeddings.patch_embeddings.weight',
}


def convert_backbone(
    sd: Mapping, fmt: str, prefix: Optional[str] = None
) -> StateDict:
    """Select the backbone in ``sd`` and convert it to mmssl keys.

    Args:
        sd (Mapping): Tensors of the checkpoint.
        fmt (str): A backbone format (not ``'auto'`` / ``'mmssl_full'``).
        prefix (str, optional): Backbone prefix; None finds it from the
            format's marker key, teacher first.
    """
    if prefix is None:
        found = backbone_prefixes(sd, _MARKER_OF[fmt])
        prefix = found[0] if found else ''
    if prefix:
        sd = strip_prefix(sd, prefix)
    if fmt == 'dinov2':
        return _dinov2_layout(sd)
    if fmt == 'timm':
        _refuse_timm_without_pos_embed(sd)
        return _dinov2_layout(timm_to_dinov2(sd))
    if fmt == 'timm_dinov3':
        hub = timm_dinov3_to_dinov3(sd)
        return dict(_dinov3_converter('dinov3')(hub, strict=False))
    if fmt == 'hf_dinov2':
        return hf_dinov2_to_mmssl(sd, strict=False)
    if fmt in ('dinov3', 'hf_dinov3'):
        return dict(_dinov3_converter(fmt)(sd))
    return dict(sd)  # mmssl


def _refuse_timm_without_pos_embed(sd: Mapping) -> None:
    """A timm ViT without ``pos_embed`` is not the DINOv2 layout."""
    if 'pos_embed' in sd:
        return
    if is_timm_dinov3(sd):
        raise WarmStartError(
            'warm_start: the checkpoint is a timm DINOv3 model (eva.py '
            "layout: reg_token, gamma_1, no pos_embed), not format='timm' "
            "(timm's DINOv2 ViT). Use format='timm_dinov3' (or 'auto') "
            'with a DINOv3ViT backbone (configs/dinov3/).'
        )
    raise WarmStartError(
        "warm_start: format='timm' expects timm's ViT layout with "
        'pos_embed (vit_*_dinov2); this file has none (first keys: '
        f'{list(sd)[:5]}). A RoPE model (timm eva.py) other than DINOv3 '
        'has no mmssl counterpart: convert it yourself or use a DINOv2 '
        'or DINOv3 checkpoint.'
    )


def hf_dinov3_rope(path: str, backbone: nn.Module) -> Optional[StateDict]:
    """``rope_embed.periods`` from the HF config beside ``path``.

    Returns:
        dict, optional: ``{'rope_embed.periods': ...}``, or None without a
        ``config.json`` (the backbone keeps its own periods).

    Raises:
        WarmStartError: A RoPE the backbone cannot compute, or a base
            other than the backbone's ``rope_base``.
    """
    module = importlib.import_module(_DINOV3_MODULE)
    read = getattr(module, 'read_hf_config', None)
    config = read(path) if read else None
    if config is None:
        print_log(
            f'warm_start: no config.json beside {path}; the HF DINOv3 RoPE '
            "base is taken to be the backbone's rope_base.",
            logger='current',
        )
        return None
    try:
        periods = _dinov3_converter('rope')(config)
    except ValueError as err:
        raise WarmStartError(f'warm_start: {err}') from err
    theta = (config.get('rope_parameters') or {}).get(
        'rope_theta', config.get('rope_theta', 100.0)
    )
    base = getattr(getattr(backbone, 'rope_embed', None), 'base', None)
    if base is not None and float(base) != float(theta):
        raise WarmStartError(
            f'warm_start: {path} was trained with rope_theta={theta} '
            f'(config.json) but the backbone has rope_base={base}; set '
            f'model.backbone.rope_base={theta} in the config.'
        )
    return {'rope_embed.periods': periods}


def grow_in_channels(weight: torch.Tensor, channels: int) -> torch.Tensor:
    """Patch-embedding kernel (D, c, p, p) -> (D, C, p, p), C >= c.

    The first c channels are kept; each new one is the mean of the old
    ones over the channel axis (multi-channel microscopy from RGB weights).
    """
    old = weight.shape[1]
    if channels < old:
        raise ValueError(f'Cannot shrink {old} input channels to {channels}.')
    mean = weight.mean(dim=1, keepdim=True)  # (D, 1, p, p)
    extra = mean.expand(-1, channels - old, *weight.shape[2:])
    return torch.cat([weight, extra], dim=1)


def _adapt(state: StateDict, own: Mapping) -> StateDict:
    """Grow conv input channels and resize ``pos_embed`` to ``own``."""
    out = dict(state)
    for key, value in state.items():
        target = own.get(key)
        if target is None or target.shape == value.shape:
            continue
        if (
            value.dim() == 4
            and value.shape[0] == target.shape[0]
            and value.shape[2:] == target.shape[2:]
            and value.shape[1] < target.shape[1]
        ):
            out[key] = grow_in_channels(value, target.shape[1])
        elif key == 'pos_embed' and value.dim() == 3:
            out[key] = resize_pos_embed(
                value, square_grid(target.shape[1] - 1), num_prefix_tokens=1
            )
    return out


def check_match(
    report: LoadReport, total: int, min_match: float, what: str
) -> float:
    """Share of ``total`` tensors matched; raise below ``min_match``."""
    share = len(report.matched) / max(total, 1)
    if share < min_match:
        raise WarmStartError(
            f'warm_start: only {len(report.matched)}/{total} '
            f'({share:.1%}) of the {what} tensors were loaded, below '
            f'min_match={min_match:.0%}. Is warm_start.format right, and '
            f'does the backbone config (arch, patch size, registers) '
            f'match the checkpoint?\n{report.summary()}'
        )
    return share


def apply_warm_start(model: nn.Module, cfg: Mapping, logger: Any = 'current'):
    """Load ``cfg['checkpoint']`` into a DINO-family algorithm.

    Args:
        model (nn.Module): Has ``backbone`` and ``teacher['backbone']``.
        cfg (Mapping): ``model.warm_start``; keys :data:`WARM_START_KEYS`:
            ``checkpoint`` (path), ``format`` (default ``'auto'``),
            ``min_match`` (default 0.95), ``prefix`` (backbone prefix in
            the file, default found: the teacher, else the online
            network), ``network`` (``'teacher'``, ``'online'`` or
            ``'momentum'``: that one), ``trusted`` (full unpickling).
        logger: Where the report is printed.

    Returns:
        LoadReport: The report of the student backbone (or whole model for
        ``'mmssl_full'``).

    Raises:
        WarmStartError: Too few tensors matched, or unknown format.
    """
    unknown = set(cfg) - set(WARM_START_KEYS)
    if unknown:
        raise ValueError(
            f'Unknown warm_start keys {sorted(unknown)}; known: '
            f'{list(WARM_START_KEYS)}.'
        )
    path, fmt = cfg['checkpoint'], cfg.get('format', 'auto')
    min_match = float(cfg.get('min_match', 0.95))
    if fmt not in FORMATS:
        raise WarmStartError(
            f'warm_start.format={fmt!r}; use one of {FORMATS}.'
        )
    sd = read_weights(path, cfg.get('trusted'))
    if fmt == 'mmssl_full':
        return _load_full(model, sd, path, min_match, logger)
    if fmt == 'auto':
        fmt = detect_format(sd)
    prefix = cfg.get('prefix')
    if prefix is None:
        network = cfg.get('network')
        found = backbone_prefixes(sd, _MARKER_OF[fmt], network=network)
        if found or not network:
            prefix = found[0] if found else ''
        else:  # a clear error naming the networks the file has
            prefix = find_backbone_prefix(sd, network=network)
    state = convert_backbone(sd, fmt, prefix)
    if fmt == 'hf_dinov3':
        state.update(hf_dinov3_rope(path, model.backbone) or {})
    own = model.backbone.state_dict()
    report = load_pretrained(
        model.backbone,
        _adapt(state, own),
        strip_prefixes=(),
        state_key=None,
        logger=logger,
    )
    share = check_match(report, len(own), min_match, 'backbone')
    model.teacher['backbone'].load_state_dict(model.backbone.state_dict())
    schedule = {k: cfg[k] for k in SCHEDULE_KEYS if k in cfg}
    print_log(
        f'warm_start: {fmt} {describe_network(prefix, sd)} from {path} '
        'in student and teacher '
        f'({share:.1%} of {len(own)} tensors); heads freshly initialised.'
        + (
            f' Schedule {schedule}: applied by WarmStartHook (added to '
            'custom_hooks unless the config has it).'
            if schedule
            else ''
        ),
        logger=logger,
    )
    return report


def _load_full(model, sd, path, min_match, logger) -> LoadReport:
    """Whole algorithm checkpoint: student, teacher, heads, buffers."""
    report = load_pretrained(
        model, sd, strip_prefixes=('module.',), state_key=None, logger=logger
    )
    own = model.state_dict()
    backbone = [
        k for k in own if k.startswith(('backbone.', 'teacher.backbone.'))
    ]
    sub = LoadReport(matched=[k for k in report.matched if k in backbone])
    share = check_match(
        sub, len(backbone), min_match, 'student/teacher backbone'
    )
    print_log(
        f'warm_start: whole model from {path} ({share:.1%} of the backbone '
        f'tensors, {len(report.matched)}/{len(own)} in all).',
        logger=logger,
    )
    return report


__all__ = [
    'FORMATS',
    'WARM_START_KEYS',
    'WarmStartError',
    'apply_warm_start',
    'check_match',
    'convert_backbone',
    'detect_format',
    'grow_in_channels',
    'hf_dinov3_rope',
    'read_weights',
]
