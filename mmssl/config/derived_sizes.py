"""Neck and head input sizes that follow the backbone (``'auto'``).

A config writes ``in_channels='auto'`` (or ``embed_dim``/``embed_dims``,
as the class names its input size) in ``model.neck``, ``model.head`` or
``model.patch_head``; :func:`resolve_model_sizes` replaces it by:

* in the neck: the backbone's output channels;
* in a head: the neck's ``out_channels`` when the neck states one (e.g.
  ``NonLinearNeck``), else the backbone's output channels.

Dicts nested in a neck or head follow the same rule (a predictor MLP in
``LatentPredictHead``, ``BEiTV2Neck.backbone_arch``). Two more spellings:

* ``backbone_arch='auto'`` in a neck or head (``BEiTV2Neck``) becomes the
  backbone's arch settings (its ``arch`` dict, or its arch table's entry
  for an arch name), so the extra layers match the backbone's width;
* ``enc_dec_norm_dim='auto'`` in the model itself (``SparK``) becomes the
  backbone's output channels.

The backbone's output channels come from the arch table of a
single-stage (ViT-like) backbone, else from the backbone built once (on
the ``meta`` device where it can be, so no memory is used):
``feat_dim`` (ResNets), ``num_features`` (hierarchical transformers; the
last stage) or ``embed_dims`` (ViTs). So ``model.backbone.arch=small``
(ViT) or ``model.backbone.depth=18`` (ResNet) alone gives a consistent
model. A number in the config is kept as it is.
"""

import copy
from typing import Any, Dict, Optional

import torch
from torch import nn

from mmssl.registry import FUNCTIONS, MODELS

AUTO = 'auto'
#: Argument names that hold a neck's or head's input size
#: (``decoder_embed_dim`` where a decoder must keep the encoder's width:
#: iTPN's CLIP mode normalises the decoder output with ``embed_dim``).
SIZE_KEYS = ('in_channels', 'embed_dim', 'embed_dims', 'decoder_embed_dim')
_HEAD_KEYS = ('head', 'patch_head')
#: A neck's or head's copy of the backbone's arch (``BEiTV2Neck``).
ARCH_KEY = 'backbone_arch'
#: Model arguments that hold the backbone's output channels (``SparK``).
MODEL_SIZE_KEYS = ('enc_dec_norm_dim',)


def backbone_out_channels(backbone: nn.Module) -> int:
    """The channel count of a built backbone's (last) output.

    Args:
        backbone (nn.Module): A backbone.

    Returns:
        int: ``feat_dim``, the last ``num_features`` or ``embed_dims``.

    Raises:
        ValueError: The backbone has none of them.
    """
    for name in ('feat_dim', 'num_features', 'embed_dims'):
        value = getattr(backbone, name, None)
        if isinstance(value, (list, tuple)) and value:
            value = value[-1]
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    raise ValueError(
        f'Cannot tell the output channels of {type(backbone).__name__} '
        '(no feat_dim, num_features or embed_dims); set the neck/head '
        "input sizes explicitly instead of 'auto'."
    )


def _plain_vit_width(backbone_cfg: Dict) -> Optional[int]:
    """``embed_dims`` of a single-stage (ViT-like) backbone from its arch
    table, without building it; None when that cannot be read."""
    try:
        cls = MODELS.get(backbone_cfg['type'])
    except Exception:  # an unknown type: the build will say so
        return None
    arch = backbone_cfg.get('arch')
    zoo = getattr(cls, 'arch_zoo', None)
    if isinstance(arch, str) and isinstance(zoo, dict):
        arch = zoo.get(arch.lower(), zoo.get(arch))
    if not isinstance(arch, dict) or 'depths' in arch:
        return None  # hierarchical: the last stage is wider
    if hasattr(cls, 'num_features') or 'feat_dim' in vars(cls):
        return None
    dims = arch.get('embed_dims')
    return dims if isinstance(dims, int) else None


def _build_backbone(backbone_cfg: Dict) -> nn.Module:
    cfg = copy.deepcopy(backbone_cfg)
    cfg.pop('init_cfg', None)  # never load weights for a size
    try:
        with torch.device('meta'):
            return MODELS.build(cfg)
    except Exception:  # e.g. .item() on a meta tensor in __init__
        return MODELS.build(cfg)


def _has_auto(part: Any) -> bool:
    """Whether ``part`` or a dict nested in it has an ``'auto'`` size."""
    if not isinstance(part, dict):
        return False
    return any(part.get(k) == AUTO for k in SIZE_KEYS + (ARCH_KEY,)) or any(
        _has_auto(v) for v in part.values()
    )


def backbone_arch_settings(backbone_cfg: Dict) -> Dict:
    """The backbone's arch as a dict (``embed_dims``, ``num_layers``,
    ``num_heads``, ``feedforward_channels``), for ``backbone_arch='auto'``.

    Both ``num_layers`` and ``depth`` are given (``BEiTV2Neck`` checks
    for the first and reads the second).

    Raises:
        ValueError: The arch is neither a dict nor a name in the
            backbone's arch table.
    """
    arch = backbone_cfg.get('arch')
    if isinstance(arch, str):
        zoo = getattr(MODELS.get(backbone_cfg['type']), 'arch_zoo', None)
        zoo = zoo if isinstance(zoo, dict) else {}
        arch = zoo.get(arch.lower(), zoo.get(arch))
    if not isinstance(arch, dict):
        raise ValueError(
            f"backbone_arch='auto' needs the arch settings of "
            f'{backbone_cfg.get("type")}(arch={backbone_cfg.get("arch")!r}):'
            ' give model.backbone.arch as a name of its arch table or as '
            "a dict, or set backbone_arch explicitly instead of 'auto'."
        )
    arch = dict(arch)
    layers = arch.get('num_layers', arch.get('depth'))
    if layers is not None:
        arch.setdefault('num_layers', layers)
        arch.setdefault('depth', layers)
    return arch


def _fill(part: Dict, size: int, backbone_cfg: Dict) -> None:
    """Fill ``'auto'`` sizes in ``part`` and the dicts nested in it (e.g.
    ``LatentPredictHead.predictor``, ``BEiTV2Neck.backbone_arch``)."""
    for key, value in part.items():
        if key in SIZE_KEYS and value == AUTO:
            part[key] = size
        elif key == ARCH_KEY and value == AUTO:
            part[key] = backbone_arch_settings(backbone_cfg)
        elif isinstance(value, dict):
            _fill(value, size, backbone_cfg)


@FUNCTIONS.register_module()
def resolve_model_sizes(model_cfg: Dict) -> Dict:
    """A copy of ``model_cfg`` with the ``'auto'`` sizes filled in.

    Args:
        model_cfg (dict): The config's ``model``.

    Returns:
        dict: ``model_cfg`` itself when nothing is ``'auto'``, else a
        resolved copy.

    Raises:
        ValueError: ``'auto'`` without a backbone, or a backbone whose
            output channels cannot be read.
    """
    parts = ('neck',) + _HEAD_KEYS
    top = [k for k in MODEL_SIZE_KEYS if model_cfg.get(k) == AUTO]
    if not top and not any(_has_auto(model_cfg.get(p)) for p in parts):
        return model_cfg
    if not isinstance(model_cfg.get('backbone'), dict):
        raise ValueError("'auto' neck/head sizes need model.backbone.")
    model_cfg = copy.deepcopy(model_cfg)
    channels = _plain_vit_width(model_cfg['backbone'])
    if channels is None:
        channels = backbone_out_channels(
            _build_backbone(model_cfg['backbone'])
        )
    for key in top:
        model_cfg[key] = channels
    backbone_cfg = model_cfg['backbone']
    neck = model_cfg.get('neck')
    if _has_auto(neck):
        _fill(neck, channels, backbone_cfg)
    head_in: Optional[int] = channels
    if isinstance(neck, dict) and isinstance(neck.get('out_channels'), int):
        head_in = neck['out_channels']
    for key in _HEAD_KEYS:
        if _has_auto(model_cfg.get(key)):
            _fill(model_cfg[key], head_in, backbone_cfg)
    return model_cfg
