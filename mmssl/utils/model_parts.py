"""Finding the backbone to evaluate or publish inside an algorithm.

Teacher-student and momentum methods keep two copies of the backbone. The
one users want for evaluation and transfer is the teacher (DINO, iBOT,
DINOv2) or the momentum encoder (BYOL, MoCo), which DINO (Caron et al.
2021, https://arxiv.org/abs/2104.14294) showed to be the better one. The
rules below are shared by the tools and :class:`KNNEvalHook` so they agree.
"""

from torch import nn

#: Backbone locations, tried in order; the first that exists wins. The same
#: dotted paths are the state-dict key prefixes (plus a trailing dot).
TEACHER_BACKBONE_PATHS: tuple[str, ...] = (
    'teacher.backbone',  # DINO / iBOT / DINOv2 style teacher module
    'teacher_backbone',
    'target_net.module.0',  # mmpretrain BYOL: CosineEMA(Sequential(bb, nk))
    'target_net.0',  # a plain Sequential(backbone, neck) target network
    'momentum_encoder.module.0',  # mmpretrain MoCo v2 / v3
    'momentum_encoder.0',
    'teacher',  # the teacher is the backbone itself
)
STUDENT_BACKBONE_PATHS: tuple[str, ...] = ('backbone', 'student.backbone')


def _get(module: nn.Module, path: str) -> nn.Module | None:
    try:
        return module.get_submodule(path)
    except AttributeError:
        return None


def find_backbone(
    model: nn.Module, prefer_teacher: bool = True, path: str | None = None
) -> tuple[nn.Module, str]:
    """The backbone of an algorithm and its dotted path.

    Args:
        model (nn.Module): An algorithm (DDP wrappers are unwrapped) or a
            backbone.
        prefer_teacher (bool): Look at :data:`TEACHER_BACKBONE_PATHS` first
            (teacher, target network, momentum encoder). Defaults to True.
        path (str, optional): An explicit dotted path; overrides the rules.

    Returns:
        tuple[nn.Module, str]: The backbone and its path (``''`` when the
        model has no known backbone attribute and is used itself).

    Raises:
        ValueError: ``path`` does not exist in the model.
    """
    model = getattr(model, 'module', model) if _is_wrapper(model) else model
    if path is not None:
        found = _get(model, path) if path else model
        if found is None:
            raise ValueError(
                f'The model ({type(model).__name__}) has no submodule '
                f'"{path}". Top-level parts: '
                f'{[n for n, _ in model.named_children()]}.'
            )
        return found, path
    paths = (
        TEACHER_BACKBONE_PATHS if prefer_teacher else ()
    ) + STUDENT_BACKBONE_PATHS
    for p in paths:
        found = _get(model, p)
        if found is not None and any(True for _ in found.parameters()):
            return found, p
    return model, ''


def _is_wrapper(model: nn.Module) -> bool:
    from torch.nn.parallel import DataParallel, DistributedDataParallel

    try:
        from mmengine.model import is_model_wrapper

        return is_model_wrapper(model)
    except ImportError:  # pragma: no cover
        return isinstance(model, (DataParallel, DistributedDataParallel))


def backbone_prefix(keys, prefer_teacher: bool = True) -> str:
    """The state-dict prefix of the backbone, by the rules of
    :func:`find_backbone` (teacher / target / momentum first).

    Args:
        keys (Iterable[str]): State-dict keys of the whole algorithm.
        prefer_teacher (bool): See :func:`find_backbone`.

    Returns:
        str: The prefix including its trailing dot, e.g. ``'backbone.'``;
        ``'module.'`` in front when every key has it (a state dict saved
        from a DDP wrapper).

    Raises:
        ValueError: No known backbone prefix occurs in ``keys``.
    """
    keys = list(keys)
    if keys and all(k.startswith('module.') for k in keys):
        # saved from a DDP / DataParallel wrapper without unwrapping
        stripped = [k[len('module.') :] for k in keys]
        return 'module.' + backbone_prefix(stripped, prefer_teacher)
    paths = (
        TEACHER_BACKBONE_PATHS if prefer_teacher else ()
    ) + STUDENT_BACKBONE_PATHS
    for p in paths:
        prefix = p + '.'
        if any(k.startswith(prefix) for k in keys):
            return prefix
    raise ValueError(
        'Found no backbone weights in the checkpoint: none of the keys '
        f'starts with {[p + "." for p in paths]}. First keys: {keys[:5]}. '
        'Pass the prefix explicitly (e.g. --prefix backbone.).'
    )
