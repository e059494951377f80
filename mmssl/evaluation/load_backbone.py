"""Load the backbone an evaluation measures, or refuse to measure.

Every evaluation (kNN, linear, the dense probes, ``tools/test.py``) loads
its weights here: any file the warm-start loader reads (an mmssl
checkpoint, the DINOv2/DINOv3 hub layouts, timm, HF transformers; see
:mod:`mmssl.checkpoint.warm_start`), the network each method's paper
evaluates: the teacher of the DINO family (Caron et al. 2021,
https://arxiv.org/abs/2104.14294; DINOv2/v3), else the online network
(BYOL, MoCo); ``network='momentum'`` (``--network momentum``) takes a
momentum encoder instead. The report names the network taken and the
option for the others. The weights go into every backbone copy of the
model (student and teacher, online and momentum), so the features agree
whichever copy the algorithm extracts them with.

When fewer than ``min_match`` of the backbone's tensors are loaded (the
threshold of warm start, 95 %), :class:`BackboneMismatchError` says in one
line what matched and which config to pass: a figure of a mostly random
network is never reported as the checkpoint's.
"""

import glob
import os.path as osp
import re
from dataclasses import dataclass
from typing import Dict, List, Optional

import torch
from torch import nn

from mmssl.checkpoint import (
    LoadReport,
    backbone_prefixes,
    describe_network,
    load_checkpoint,
    load_pretrained,
    strip_prefix,
    unwrap_state_dict,
)
from mmssl.checkpoint.state_dict import (
    MOMENTUM_BACKBONE_PATHS,
    STUDENT_BACKBONE_PATHS,
    TEACHER_BACKBONE_PATHS,
    find_backbone_prefix,
)
from mmssl.checkpoint.warm_start import (
    WarmStartError,
    _adapt,  # grow input channels, resize pos_embed: as warm start does
    convert_backbone,
    detect_format,
    read_weights,
)
from mmssl.models.utils.model_parts import find_backbone

#: Share of the backbone tensors that must load (as ``warm_start``).
MIN_MATCH = 0.95
_STAMP = re.compile(r'_\d{8}_\d{6}$')


class BackboneMismatchError(WarmStartError):
    """The checkpoint does not hold the config's backbone."""


@dataclass
class LoadedBackbone:
    """What :func:`load_backbone_weights` did.

    Attributes:
        path (str): Dotted path of the measured backbone in the model.
        copies (list[str]): Every backbone copy that received the weights.
        source (str): Where the weights came from in the file (format and
            prefix).
        report (LoadReport): Key report of the measured backbone.
        share (float): Matched share of the backbone's tensors.
        whole (bool): The whole model was loaded first.
    """

    path: str
    copies: List[str]
    source: str
    report: LoadReport
    share: float
    whole: bool = False

    def summary(self) -> str:
        """The load report, a few lines."""
        head = 'whole model, then ' if self.whole else ''
        where = ', '.join(p or '(model)' for p in self.copies)
        return (
            f'{head}backbone {where} from {self.source}: {self.share:.1%} of '
            f'the backbone tensors; {self.report.summary(3)}'
        )


def backbone_copies(model: nn.Module) -> List[str]:
    """Dotted paths of every copy of the measured backbone, measured first.

    The measured one is :func:`find_backbone`'s (teacher first); the other
    known backbone paths whose keys equal its keys are copies.
    """
    main, path = find_backbone(model)
    keys = set(main.state_dict())
    found = [path]
    known = TEACHER_BACKBONE_PATHS + STUDENT_BACKBONE_PATHS
    for other in known + MOMENTUM_BACKBONE_PATHS:
        if other == path or not path:
            continue
        try:
            module = model.get_submodule(other)
        except AttributeError:
            continue
        if module is not main and set(module.state_dict()) == keys:
            found.append(other)
    return found


def _read(checkpoint: str, trusted: Optional[bool]):
    """``(tensors, meta)`` of a checkpoint file; ``module.`` stripped."""
    if checkpoint.endswith('.safetensors'):
        state, meta = read_weights(checkpoint), {}
    else:
        raw = load_checkpoint(checkpoint, trusted=trusted)
        meta = raw.get('meta') if isinstance(raw, dict) else None
        state = unwrap_state_dict(raw)
        meta = meta if isinstance(meta, dict) else {}
    if state and all(k.startswith('module.') for k in state):
        state = strip_prefix(state, 'module.')
    return state, meta


def select_weights(
    state: Dict,
    own: Dict,
    prefix: Optional[str] = None,
    network: Optional[str] = None,
):
    """``(backbone weights in mmssl keys, source)`` from a whole file.

    ``prefix`` (``''`` for a bare backbone) overrides the search; else the
    format is told by its keys (:func:`detect_format`) and its backbone
    found (``network``, or the teacher, else the online network); a file
    of no known ViT layout (a ResNet...) is searched for the known
    backbone paths, then taken as a bare backbone. The source names the
    network taken and the option for the others.
    """
    if prefix is not None:
        return strip_prefix(state, prefix) if prefix else dict(state), (
            describe_network(prefix, state)
        )
    if network is not None:  # explicit: that network or a clear error
        find_backbone_prefix(state, network=network)
    try:
        fmt = detect_format(state)
    except WarmStartError:
        fmt = None
    stored = _as_stored(state, own, network)
    if fmt is not None:
        prefixes = backbone_prefixes(state, _marker(fmt), network=network)
        where = prefixes[0] if prefixes else ''
        found = convert_backbone(state, fmt, where)
        matched = sum(k in own for k in found)
        # a backbone whose own keys look foreign (HiViT's patch_embed.proj
        # is DINOv2's marker) is kept as stored when that matches more
        if (matched or fmt != 'mmssl') and matched >= sum(
            k in own for k in stored[0]
        ):
            return found, f'{fmt} layout, {describe_network(where, state)}'
    return stored


def _as_stored(state: Dict, own: Dict, network: Optional[str] = None):
    """``(weights, source)``: the file's backbone under its own key
    names, bare or below the first backbone prefix found."""
    bare = sum(k in state for k in own) >= MIN_MATCH * len(own)
    prefixes = backbone_prefixes(state, network=network)
    if prefixes and not (bare and network is None):
        where = prefixes[0]
        return strip_prefix(state, where), describe_network(where, state)
    return dict(state), describe_network('', state)


def _marker(fmt: str) -> Optional[str]:
    from mmssl.checkpoint.warm_start import _MARKER_OF

    return _MARKER_OF.get(fmt)


def config_hint(meta: Dict, weights: Dict, root: str = 'configs') -> str:
    """Which config the file was trained with, or the shape of its ViT."""
    name = meta.get('experiment_name') or ''
    name = _STAMP.sub('', str(name))
    if name:
        paths = glob.glob(osp.join(root, '**', name + '.py'), recursive=True)
        if paths:
            return f'it was trained with {paths[0]}: pass that config'
        return f'it was trained with config {name}: pass that config'
    for key, value in weights.items():
        if key.endswith('patch_embed.projection.weight') and value.dim() == 4:
            blocks = {
                k.split('.')[1] for k in weights if k.startswith('layers.')
            }
            return (
                f'its ViT has width {value.shape[0]}, patch '
                f'{value.shape[-1]}, {len(blocks)} blocks: pass a config '
                'with that backbone'
            )
    return 'pass the config the checkpoint was trained with'


def _mismatch(checkpoint, config, loaded, meta, weights) -> str:
    report = loaded.report
    total = len(report.matched) + len(report.missing)
    total += len(report.shape_mismatched)
    example = ''
    if report.shape_mismatched:
        key, got, want = report.shape_mismatched[0]
        example = f', e.g. {key} {tuple(got)} vs {tuple(want)}'
    return (
        f'{checkpoint} does not hold the backbone of {config}: '
        f'{len(report.matched)}/{total} ({loaded.share:.0%}) of its '
        f'tensors matched ({loaded.source}; {len(report.unexpected)} '
        f'unexpected, {len(report.shape_mismatched)} of another shape'
        f'{example}), below {MIN_MATCH:.0%}; '
        f'{config_hint(meta, weights)} (or --prefix).'
    )


def load_backbone_weights(
    model: nn.Module,
    checkpoint: str,
    prefix: Optional[str] = None,
    trusted: Optional[bool] = None,
    config: str = 'the config',
    min_match: float = MIN_MATCH,
    network: Optional[str] = None,
) -> LoadedBackbone:
    """Load ``checkpoint``'s backbone into ``model``: the teacher, else
    the online network, or the ``network`` asked for.

    A file that holds the whole model (a training checkpoint of the same
    config) is loaded whole first, so necks and heads load too; the
    backbone weights then go into every backbone copy.

    Args:
        model (nn.Module): An algorithm or a bare backbone.
        checkpoint (str): Path (``.pth``, ``.bin``, ``.safetensors``).
        prefix (str, optional): Backbone prefix in the file (``''``: a
            bare backbone); None finds it, teacher first.
        trusted (bool, optional): Fully unpickle (trusted files only).
        config (str): Config name for the error message.
        min_match (float): Share of the backbone tensors that must load.
        network (str, optional): ``'teacher'``, ``'online'`` or
            ``'momentum'``; None: the teacher, else the online network.

    Returns:
        LoadedBackbone: What was loaded where.

    Raises:
        BackboneMismatchError: Below ``min_match``.
    """
    model = getattr(model, 'module', model)
    state, meta = _read(checkpoint, trusted)
    copies = backbone_copies(model)
    main = model.get_submodule(copies[0]) if copies[0] else model
    own = main.state_dict()
    whole = False
    if (
        prefix is None
        and copies[0]
        and (
            sum(k in state for k in model.state_dict())
            >= min_match * len(model.state_dict())
        )
    ):
        load_pretrained(model, state, strip_prefixes=(), logger='silent')
        whole = True
    weights, source = select_weights(state, own, prefix, network)
    report = load_pretrained(
        main,
        _adapt(weights, own),
        strip_prefixes=(),
        state_key=None,
        logger='silent',
    )
    loaded = LoadedBackbone(
        copies[0],
        copies,
        source,
        report,
        len(report.matched) / max(len(own), 1),
        whole,
    )
    if loaded.share < min_match:
        raise BackboneMismatchError(
            _mismatch(checkpoint, config, loaded, meta, weights)
        )
    with torch.no_grad():
        for path in copies[1:]:
            model.get_submodule(path).load_state_dict(main.state_dict())
    return loaded


__all__ = [
    'MIN_MATCH',
    'BackboneMismatchError',
    'LoadedBackbone',
    'backbone_copies',
    'config_hint',
    'load_backbone_weights',
    'select_weights',
]
