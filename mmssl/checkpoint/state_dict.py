"""Getting at the weights inside a loaded checkpoint.

One function per job, shared by the tools, the converters, the pretrained
loader and the evaluation hooks:

* :func:`unwrap_state_dict`: the tensor dict inside the wrappers that
  training code puts around it (``state_dict`` of mmengine, ``model`` of
  DINOv2 training files, ``teacher`` of ``teacher_checkpoint.pth``,
  ``module``) and without a ``module.`` prefix common to every key (DDP).
* :func:`strip_prefix` / :func:`add_prefix`: select keys by prefix.
* :func:`find_backbone_prefix`: which prefix holds the backbone users want,
  and :func:`describe_network`: which network that is, in words.

Which network (:data:`NETWORKS`) is taken follows what each method's paper
evaluates: the teacher of the DINO family (DINO, Caron et al. 2021,
https://arxiv.org/abs/2104.14294; iBOT; DINOv2/v3), else the online
network (BYOL, Grill et al. 2020, evaluates the online encoder; MoCo v2
and v3 the query / base encoder; SimCLR, SwAV, MAE... have no other).
The momentum (EMA target) encoders of BYOL, MoCo and DenseCL are taken
only when asked for (``network='momentum'``, ``--network momentum``).
"""

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any, Dict, List, Optional

import torch

StateDict = Dict[str, torch.Tensor]

#: Wrapper keys :func:`unwrap_state_dict` descends through, in this order.
STATE_KEYS: tuple = ('state_dict', 'model', 'module', 'teacher')

#: Backbone locations of DINO-family teachers, best first. The same
#: dotted paths are module paths and (plus a dot) state-dict key prefixes.
TEACHER_BACKBONE_PATHS: tuple = (
    'teacher.backbone',  # DINO / iBOT / DINOv2 style teacher module
    'teacher_backbone',
    'teacher.module.0',  # mmpretrain / MMSelfSup iBOT: CosineEMA(Sequential)
)
#: Backbone locations of the online network.
STUDENT_BACKBONE_PATHS: tuple = ('backbone', 'student.backbone')
#: Backbone locations of momentum (EMA target) encoders.
MOMENTUM_BACKBONE_PATHS: tuple = (
    'target_net.module.0',  # mmpretrain BYOL: CosineEMA(Sequential(bb, nk))
    'target_net.0',  # a plain Sequential(backbone, neck) target network
    'momentum_encoder.module.0',  # mmpretrain MoCo v3
    'momentum_encoder.0',
    'encoder_k.module.0',  # mmpretrain / MMSelfSup MoCo v2, DenseCL
    'encoder_k.0',  # MMSelfSup 0.x MoCo
    'teacher',  # CAE: an EMA copy of the encoder (the paper evaluates
    # the encoder itself)
)
#: The networks a checkpoint may hold, by the name ``--network`` takes.
NETWORKS: dict = dict(
    teacher=TEACHER_BACKBONE_PATHS,
    online=STUDENT_BACKBONE_PATHS,
    momentum=MOMENTUM_BACKBONE_PATHS,
)
_WORDS = dict(
    teacher='teacher', online='online network', momentum='momentum encoder'
)


def _descend(checkpoint: Mapping, state_key: Optional[str]) -> Any:
    obj: Any = checkpoint
    if state_key == 'auto':
        # Down through wrappers until a level holds tensors.
        while isinstance(obj, Mapping) and not any(
            torch.is_tensor(v) for v in obj.values()
        ):
            key = next(
                (k for k in STATE_KEYS if isinstance(obj.get(k), Mapping)),
                None,
            )
            if key is None:
                break
            obj = obj[key]
    elif state_key:
        for part in state_key.split('.'):
            if not isinstance(obj, Mapping) or part not in obj:
                have = list(obj)[:20] if isinstance(obj, Mapping) else obj
                raise KeyError(
                    f'state_key={state_key!r}: no {part!r} in the '
                    f'checkpoint; available keys: {have}'
                )
            obj = obj[part]
    return obj


def unwrap_state_dict(
    checkpoint: Mapping, state_key: Optional[str] = 'auto'
) -> StateDict:
    """The tensor dict of a loaded checkpoint.

    Args:
        checkpoint (Mapping): What :func:`mmssl.checkpoint.load_checkpoint`
            returned: a state dict, or one wrapped as in mmengine
            (``{'state_dict': ...}``), DINOv2 training (``{'model': ...}``,
            ``{'teacher': ...}``) or DDP (``{'module': ...}``) files.
        state_key (str, optional): ``'auto'`` descends through
            :data:`STATE_KEYS` until a level holds tensors; a dotted key
            (``'teacher'``, ``'state_dict.model'``) picks a sub-dict; None
            uses ``checkpoint`` itself. Defaults to ``'auto'``.

    Returns:
        dict: The tensor entries, in file order; a ``module.`` prefix that
        every key has (DDP) is removed.

    Raises:
        KeyError: ``state_key`` names a missing entry.
        TypeError: The selection is not a dict.
    """
    obj = _descend(checkpoint, state_key)
    if not isinstance(obj, Mapping):
        raise TypeError(
            f'Expected a state dict, got {type(obj).__name__}; pick the '
            'sub-dict that holds the weights with state_key=...'
        )
    state = OrderedDict((k, v) for k, v in obj.items() if torch.is_tensor(v))
    if state and all(k.startswith('module.') for k in state):
        state = strip_prefix(state, 'module.')
    return state


def strip_prefix(state_dict: Mapping, prefix: str) -> StateDict:
    """The entries whose key starts with ``prefix``, with it removed.

    Args:
        state_dict (Mapping): Weights.
        prefix (str): E.g. ``'backbone.'``; ``''`` keeps every key.

    Returns:
        dict: The selected entries, in order; keys without the prefix are
        dropped.
    """
    return OrderedDict(
        (k[len(prefix) :], v)
        for k, v in state_dict.items()
        if k.startswith(prefix)
    )


def add_prefix(
    state_dict: Mapping, prefixes: Iterable[str] = ('',)
) -> StateDict:
    """Copy ``state_dict`` once under each prefix.

    Args:
        state_dict (Mapping): Weights.
        prefixes (Iterable[str]): E.g. ``('backbone.', 'teacher.backbone.')``
            to initialise a student and its teacher.

    Returns:
        dict: ``len(prefixes)`` copies of the entries (the tensors are
        shared, not cloned).
    """
    out: StateDict = OrderedDict()
    for prefix in prefixes:
        for k, v in state_dict.items():
            out[prefix + k] = v
    return out


def _check_network(network: Optional[str]) -> None:
    if network is not None and network not in NETWORKS:
        raise ValueError(
            f'network={network!r}: choose one of {sorted(NETWORKS)} '
            '(or None for the default: teacher, else online).'
        )


def _known_paths(prefer_teacher: bool, network: Optional[str] = None):
    _check_network(network)
    if network is not None:
        return NETWORKS[network]
    if prefer_teacher:
        order = TEACHER_BACKBONE_PATHS + STUDENT_BACKBONE_PATHS
    else:
        order = STUDENT_BACKBONE_PATHS + TEACHER_BACKBONE_PATHS
    return order + MOMENTUM_BACKBONE_PATHS


def network_of(prefix: str) -> Optional[str]:
    """The :data:`NETWORKS` name of a backbone prefix (``'backbone.'`` ->
    ``'online'``), None for a bare backbone or an unknown prefix."""
    path = prefix[len('module.') :] if prefix.startswith('module.') else prefix
    path = path.rstrip('.')
    return next((n for n, ps in NETWORKS.items() if path in ps), None)


def networks_in(keys: Iterable[str]) -> List[str]:
    """Names of the :data:`NETWORKS` whose backbone ``keys`` hold."""
    found = backbone_prefixes(keys)
    names = [network_of(p) for p in found]
    return [n for n in NETWORKS if n in names]


def describe_network(prefix: str, keys: Iterable[str] = ()) -> str:
    """Which network ``prefix`` is, and how to take the others in ``keys``.

    Example: ``online network `backbone.`; the momentum encoder is
    --network momentum``.
    """
    name = network_of(prefix)
    what = _WORDS[name] if name else 'backbone'
    text = f'{what} `{prefix}`' if prefix else f'{what} (bare backbone keys)'
    others = [n for n in networks_in(keys) if n != name]
    for other in others:
        text += f'; the {_WORDS[other]} is --network {other}'
    return text


def backbone_prefixes(
    keys: Iterable[str],
    marker: Optional[str] = None,
    prefer_teacher: bool = True,
    network: Optional[str] = None,
) -> List[str]:
    """Every backbone prefix among ``keys``, best first.

    Args:
        keys (Iterable[str]): State-dict keys of a whole algorithm.
        marker (str, optional): A key suffix that only a backbone has, e.g.
            ``'patch_embed.projection.weight'``: then every prefix in front
            of it is a candidate, including ``''`` (a bare backbone). Without
            a marker, the candidates are the known paths
            (:data:`TEACHER_BACKBONE_PATHS`, :data:`STUDENT_BACKBONE_PATHS`)
            that occur, behind a ``module.`` that every key has.
        prefer_teacher (bool): Rank the teacher before the online
            network (momentum encoders come last either way). Defaults to
            True.
        network (str, optional): Only this network's known paths
            (a :data:`NETWORKS` name). Defaults to None.

    Returns:
        list[str]: Prefixes with their trailing dot (or ``''``): known
        paths in the order above, then others with ``teacher`` in the name
        first, then the shortest.
    """
    keys = list(keys)
    if marker is None and keys and all(k.startswith('module.') for k in keys):
        # saved from a DDP / DataParallel wrapper without unwrapping
        inner = [k[len('module.') :] for k in keys]
        return [
            'module.' + p
            for p in backbone_prefixes(inner, None, prefer_teacher, network)
        ]
    known = [p + '.' for p in _known_paths(prefer_teacher, network)]
    if marker is None:
        every = [p + '.' for p in _known_paths(prefer_teacher)]
        found = {p for p in every if any(k.startswith(p) for k in keys)}
        # 'teacher.' (CAE's encoder copy) is not the DINO teacher's parent
        found = {
            p
            for p in found
            if p in known and not any(q.startswith(p) for q in found - {p})
        }
    else:
        found = {k[: -len(marker)] for k in keys if k.endswith(marker)}
        found = {p for p in found if p == '' or p.endswith('.')}
        if network is not None:
            found = {p for p in found if p in known}

    def rank(prefix: str) -> tuple:
        if prefix in known:
            return (0, known.index(prefix), 0, prefix)
        teacher_last = prefer_teacher == ('teacher' not in prefix)
        return (1, int(teacher_last), len(prefix), prefix)

    return sorted(found, key=rank)


def find_backbone_prefix(
    keys: Iterable[str],
    marker: Optional[str] = None,
    prefer_teacher: bool = True,
    network: Optional[str] = None,
) -> str:
    """The best backbone prefix among ``keys``; see :func:`backbone_prefixes`.

    Raises:
        ValueError: No candidate (the message names ``--prefix``), or no
            backbone of the asked ``network`` (it names those there are).
    """
    keys = list(keys)
    found = backbone_prefixes(keys, marker, prefer_teacher, network)
    if found:
        return found[0]
    if network is not None:
        have = networks_in(keys)
        raise ValueError(
            f'--network {network}: the checkpoint has no {_WORDS[network]} '
            f'(paths {list(NETWORKS[network])}); it has '
            f'{", ".join(have) or "no known network"}. Pick one of those '
            'or pass the prefix explicitly (--prefix).'
        )
    wanted = (
        f'ends with {marker!r}'
        if marker
        else f'starts with {[p + "." for p in _known_paths(prefer_teacher)]}'
    )
    raise ValueError(
        f'Found no backbone weights in the checkpoint: no key {wanted}. '
        f'First keys: {keys[:5]}. Pass the prefix explicitly (e.g. '
        '--prefix backbone.).'
    )


def select_backbone(
    state_dict: Mapping,
    prefix: Optional[str] = None,
    marker: Optional[str] = None,
    network: Optional[str] = None,
) -> StateDict:
    """The backbone's entries of ``state_dict``, its prefix removed.

    Args:
        state_dict (Mapping): Weights of a whole algorithm or a backbone.
        prefix (str, optional): The prefix; None finds it with
            :func:`find_backbone_prefix` (teacher first).
        marker (str, optional): See :func:`backbone_prefixes`; when given,
            the selection must contain it.
        network (str, optional): Take this network (:data:`NETWORKS`);
            None: the teacher, else the online network.

    Raises:
        ValueError: No backbone found, or ``marker`` missing under
            ``prefix``.
    """
    if prefix is None:
        prefix = find_backbone_prefix(state_dict, marker, network=network)
    out = strip_prefix(state_dict, prefix)
    if not out or (marker is not None and marker not in out):
        what = f'{marker!r}' if marker else 'key'
        raise ValueError(
            f'No {what} under prefix {prefix!r}; backbone prefixes found: '
            f'{backbone_prefixes(state_dict, marker)}. Pass the prefix '
            'explicitly (e.g. --src-prefix backbone.).'
        )
    return out
