"""Warm starts: load pretrained weights by key, with a clear key report."""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import torch
from mmengine.logging import print_log
from mmengine.model import BaseModule, is_model_wrapper
from torch import nn

from mmssl.registry import WEIGHT_INITIALIZERS

from .io import load_checkpoint
from .layouts.beit import expand_shared_rel_pos_bias
from .state_dict import strip_prefix, unwrap_state_dict


@dataclass
class LoadReport:
    """What :func:`load_pretrained` did with each key.

    Attributes:
        matched (list[str]): Model keys loaded from the checkpoint.
        missing (list[str]): Model keys the checkpoint does not provide.
        unexpected (list[str]): Checkpoint keys (after prefix handling) the
            model does not have.
        shape_mismatched (list[tuple]): ``(key, ckpt_shape, model_shape)``
            for keys skipped because the shapes differ.
    """

    matched: List[str] = field(default_factory=list)
    missing: List[str] = field(default_factory=list)
    unexpected: List[str] = field(default_factory=list)
    shape_mismatched: List[Tuple[str, tuple, tuple]] = field(
        default_factory=list
    )

    def summary(self, max_keys: int = 10) -> str:
        """Human-readable report, each list cut to ``max_keys`` entries."""

        def cut(items: Sequence) -> str:
            shown = ', '.join(str(i) for i in items[:max_keys])
            more = len(items) - max_keys
            return shown + (f', ... (+{more} more)' if more > 0 else '')

        lines = [
            f'matched {len(self.matched)}, missing {len(self.missing)}, '
            f'unexpected {len(self.unexpected)}, shape-mismatched '
            f'{len(self.shape_mismatched)} keys'
        ]
        if self.missing:
            lines.append(f'  missing in checkpoint: {cut(self.missing)}')
        if self.unexpected:
            lines.append(f'  unexpected in checkpoint: {cut(self.unexpected)}')
        if self.shape_mismatched:
            lines.append(
                '  shape mismatch (skipped): '
                + cut(
                    [
                        f'{k} ckpt {tuple(a)} vs model {tuple(b)}'
                        for k, a, b in self.shape_mismatched
                    ]
                )
            )
        return '\n'.join(lines)


def _candidates(key: str, strip_prefixes: Sequence[str]) -> List[str]:
    """``key`` and the keys obtained by stripping prefixes from its front.

    Prefixes are stripped greedily and repeatedly, so with
    ``('module.', 'backbone.')`` the key ``module.backbone.conv1.weight``
    yields itself, ``backbone.conv1.weight`` and ``conv1.weight``.
    """
    out = [key]
    changed = True
    while changed:
        changed = False
        for p in strip_prefixes:
            if p and out[-1].startswith(p):
                out.append(out[-1][len(p) :])
                changed = True
                break
    return out


def _load_with_hooks(model, to_load, state, report: LoadReport) -> None:
    """Load ``to_load``, and the unexpected keys too, so that a module's
    own load hooks can take old names (e.g. a head's ``fc_cls`` for
    ``fc``); what they fill moves from missing to matched."""
    unexpected = set(report.unexpected)
    extra = {k: v for k, v in state.items() if k in unexpected}
    result = model.load_state_dict({**to_load, **extra}, strict=False)
    still_missing = set(result.missing_keys)
    filled = [k for k in report.missing if k not in still_missing]
    if filled:
        report.matched = sorted(report.matched + filled)
        report.missing = [k for k in report.missing if k in still_missing]
    left = set(result.unexpected_keys)
    report.unexpected = [k for k in report.unexpected if k in left]


def load_pretrained(
    model: nn.Module,
    checkpoint: Union[str, Dict[str, Any]],
    prefix: Optional[str] = None,
    strip_prefixes: Sequence[str] = ('module.', 'backbone.'),
    state_key: Optional[str] = 'auto',
    map_location: Any = 'cpu',
    trusted: Optional[bool] = None,
    logger: Any = 'current',
) -> LoadReport:
    """Load weights into ``model`` by key, skipping what does not fit.

    Keys are matched after optional prefix handling:

    * ``prefix`` keeps only checkpoint keys starting with it and removes it
      (``prefix='backbone.'`` loads the backbone of a whole algorithm);
    * ``strip_prefixes`` are removed from a key's front, repeatedly, but
      only where that turns an unknown key into a model key, so stripping
      never breaks a key that already matched (``module.`` from DDP,
      ``backbone.`` from algorithm checkpoints loaded into a bare backbone).

    BEiT's shared relative-position table goes into every block of a
    model that has one per block (:mod:`.layouts.beit`). Shape-mismatched
    keys are skipped, not fatal. A report of matched,
    missing, unexpected and shape-mismatched keys is logged and returned.

    Args:
        model (nn.Module): Target; a DDP-style wrapper is unwrapped.
        checkpoint (str | dict): A path / URL (loaded with
            :func:`mmssl.checkpoint.load_checkpoint`) or a loaded dict.
        prefix (str, optional): Keep and strip only keys with this prefix.
            Defaults to None.
        strip_prefixes (Sequence[str]): Prefixes to strip when that helps.
            Defaults to ``('module.', 'backbone.')``.
        state_key (str, optional): Sub-dict holding the weights, see
            :func:`mmssl.checkpoint.unwrap_state_dict`. Defaults to
            ``'auto'``.
        map_location: As for ``torch.load``. Defaults to ``'cpu'``.
        trusted (bool, optional): Fully unpickle the file (trusted files
            only). None follows ``MMSSL_TRUST_CHECKPOINT``. Defaults to None.
        logger: mmengine logger or name for the report. Defaults to
            ``'current'``.

    Returns:
        LoadReport: The key report.
    """
    source = checkpoint if isinstance(checkpoint, str) else '<dict>'
    if isinstance(checkpoint, str):
        checkpoint = load_checkpoint(
            checkpoint, map_location=map_location, trusted=trusted
        )
    state = unwrap_state_dict(checkpoint, state_key)
    if prefix:
        state = strip_prefix(state, prefix)
        if not state:
            raise KeyError(
                f'No checkpoint key starts with prefix={prefix!r} in {source}'
            )

    if is_model_wrapper(model):
        model = model.module
    own = model.state_dict()
    state = expand_shared_rel_pos_bias(
        state, own, lambda key: _candidates(key, strip_prefixes)
    )
    report = LoadReport()
    to_load: Dict[str, torch.Tensor] = {}
    for key, value in state.items():
        names = _candidates(key, strip_prefixes)
        name = next((n for n in names if n in own), None)
        if name is None:
            report.unexpected.append(key)
        elif name in to_load:
            report.unexpected.append(key)  # duplicate after stripping
        elif own[name].shape != value.shape:
            report.shape_mismatched.append(
                (name, tuple(value.shape), tuple(own[name].shape))
            )
        else:
            to_load[name] = value
    report.matched = sorted(to_load)
    mismatched = {k for k, _, _ in report.shape_mismatched}
    report.missing = [
        k for k in own if k not in to_load and k not in mismatched
    ]
    _load_with_hooks(model, to_load, state, report)
    print_log(
        f'Loaded pretrained weights from {source} into '
        f'{type(model).__name__}: {report.summary()}',
        logger=logger,
    )
    return report


def _fingerprint(tensor: torch.Tensor) -> Tuple[float, float]:
    t = tensor.detach().double()
    return float(t.sum()), float(t.abs().sum())


def overwritten_after_load(model: nn.Module) -> List[str]:
    """What a module's own init changed after :class:`PretrainedStrip`
    loaded it, one line per module (the report said "matched").

    Call it once the model's ``init_weights`` has returned (the runner
    does); each record is then dropped, so training is never flagged.
    """
    lines = []
    for name, module in model.named_modules():
        record = module.__dict__.pop('_pretrained_strip_load', None)
        if not record:
            continue
        source, prints = record
        state = module.state_dict()
        changed = [
            k for k, fp in prints.items() if _fingerprint(state[k]) != fp
        ]
        if not changed:
            continue
        hint = 'put PretrainedStrip on the parent module with a prefix'
        if getattr(module, 'zero_init_residual', False):
            hint = (
                'zero_init_residual=True zeroes the last norm of every '
                f'block: set model.{name}.zero_init_residual=False, or ' + hint
            )
        lines.append(
            f'PretrainedStrip: {len(changed)} of the {len(prints)} tensors '
            f'loaded into {name or type(model).__name__} from {source} '
            f'were changed by its own init afterwards, e.g. '
            f'{", ".join(changed[:4])}; {hint}.'
        )
    return lines


@WEIGHT_INITIALIZERS.register_module()
class PretrainedStrip:
    """Weight initializer: :func:`load_pretrained` from ``init_cfg``.

    Example:
        >>> backbone = dict(type='ResNet', depth=50, init_cfg=dict(
        ...     type='PretrainedStrip', checkpoint='work_dirs/x/epoch_100.pth',
        ...     strip_prefixes=('module.', 'backbone.')))

    mmengine applies only ``type='Pretrained'`` after the sub-modules'
    own initialisation; any other initializer runs before it. So that the
    loaded weights are not overwritten, this initializer first runs the
    ``init_weights`` of the module's children itself (their normal
    initialisation), then loads the checkpoint. A module's own code after
    its ``init_weights`` (e.g. mmpretrain ResNet's ``zero_init_residual``)
    still runs afterwards: set ``zero_init_residual=False`` there, or put
    the initializer on the parent module with a ``prefix``. What such code
    changes is reported by :func:`overwritten_after_load`, which the
    runner calls after the model's init (a warning naming the tensors).

    Args:
        checkpoint (str): Path or URL.
        prefix, strip_prefixes, state_key, map_location: See
            :func:`load_pretrained`.
        min_match (float, optional): Stop with the report when fewer than
            this share of the module's tensors were loaded (a fine-tune
            that would silently start from scratch). Defaults to None (no
            check).
    """

    def __init__(
        self,
        checkpoint: str,
        prefix: Optional[str] = None,
        strip_prefixes: Sequence[str] = ('module.', 'backbone.'),
        state_key: Optional[str] = 'auto',
        map_location: Any = 'cpu',
        min_match: Optional[float] = None,
    ) -> None:
        self.min_match = min_match
        self.checkpoint = checkpoint
        self.prefix = prefix
        self.strip_prefixes = tuple(strip_prefixes)
        self.state_key = state_key
        self.map_location = map_location

    def __call__(self, module: nn.Module) -> None:
        for child in module.children():
            if is_model_wrapper(child) and not hasattr(child, 'init_weights'):
                child = child.module
            if isinstance(child, BaseModule) and not child.is_init:
                child.init_weights()
        self.report = load_pretrained(
            module,
            self.checkpoint,
            prefix=self.prefix,
            strip_prefixes=self.strip_prefixes,
            state_key=self.state_key,
            map_location=self.map_location,
        )
        state = module.state_dict()
        module.__dict__['_pretrained_strip_load'] = (
            self.checkpoint,
            {k: _fingerprint(state[k]) for k in self.report.matched},
        )
        total = len(state)
        share = len(self.report.matched) / max(total, 1)
        if self.min_match is not None and share < self.min_match:
            raise RuntimeError(
                f'PretrainedStrip: only {len(self.report.matched)}/{total} '
                f'({share:.1%}) of the {type(module).__name__} tensors were '
                f'loaded from {self.checkpoint}, below min_match='
                f'{self.min_match:.0%}. Is the prefix ({self.prefix!r}) '
                f'right, and does the config match the checkpoint?\n'
                f'{self.report.summary()}'
            )
        if hasattr(module, '_params_init_info'):
            from mmengine.model.weight_init import update_init_info

            update_init_info(
                module,
                init_info=f'{type(self).__name__}: load from '
                f'{self.checkpoint}',
            )
