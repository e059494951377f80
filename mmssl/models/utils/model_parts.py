"""Finding the backbone to evaluate or publish inside an algorithm.

Teacher-student and momentum methods keep two copies of the backbone. The
one evaluated is the one each method's paper evaluates: the teacher of the
DINO family (DINO, Caron et al. 2021, https://arxiv.org/abs/2104.14294;
iBOT; DINOv2), the online network of BYOL and MoCo; their momentum
encoders only when asked for (``network='momentum'``). The rules below are
shared by the tools and the evaluation hooks so they agree; the same paths
find the backbone in a state dict
(:func:`mmssl.checkpoint.find_backbone_prefix`).
"""

from torch import nn

from mmssl.checkpoint.state_dict import (
    NETWORKS,
    STUDENT_BACKBONE_PATHS,
    TEACHER_BACKBONE_PATHS,
)


def _get(module: nn.Module, path: str) -> nn.Module | None:
    try:
        return module.get_submodule(path)
    except AttributeError:
        return None


def find_backbone(
    model: nn.Module,
    prefer_teacher: bool = True,
    path: str | None = None,
    network: str | None = None,
) -> tuple[nn.Module, str]:
    """The backbone of an algorithm and its dotted path.

    Args:
        model (nn.Module): An algorithm (DDP wrappers are unwrapped) or a
            backbone.
        prefer_teacher (bool): Look at :data:`TEACHER_BACKBONE_PATHS`
            (DINO-family teachers) first. Defaults to True.
        path (str, optional): An explicit dotted path; overrides the rules.
        network (str, optional): Only this network's paths
            (``'teacher'``, ``'online'``, ``'momentum'``).

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
    if network is not None:
        paths = NETWORKS[network]
    for p in paths:
        found = _get(model, p)
        if found is not None and any(True for _ in found.parameters()):
            return found, p
    if network is not None:
        raise ValueError(
            f'network={network!r}: {type(model).__name__} has none of '
            f'{list(paths)}.'
        )
    return model, ''


def _is_wrapper(model: nn.Module) -> bool:
    from torch.nn.parallel import DataParallel, DistributedDataParallel

    try:
        from mmengine.model import is_model_wrapper

        return is_model_wrapper(model)
    except ImportError:  # pragma: no cover
        return isinstance(model, (DataParallel, DistributedDataParallel))
