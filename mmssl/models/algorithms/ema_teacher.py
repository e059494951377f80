"""Student / EMA-teacher bookkeeping shared by the DINO family."""

import copy
from typing import Dict, Optional

import torch
from mmpretrain.models.selfsup import BaseSelfSupervisor
from torch import Tensor, nn

from mmssl.checkpoint.warm_start import apply_warm_start

from .dino_parts import forward_backbone, strip_for_teacher

#: most elements of the scaled-student temporaries of a flagged EMA step
_EMA_CHUNK = 1 << 24


def _chunks(t_params, s_params):
    """Pairs of parameter lists of at most ``_EMA_CHUNK`` elements each
    (a single larger parameter makes a chunk of its own)."""
    start, size = 0, 0
    for i, p in enumerate(t_params):
        if size and size + p.numel() > _EMA_CHUNK:
            yield t_params[start:i], s_params[start:i]
            start, size = i, 0
        size += p.numel()
    if start < len(t_params):
        yield t_params[start:], s_params[start:]


def _forget_gram_flag(module, incompatible_keys) -> None:
    """After a state-dict load the Gram-teacher count is read anew."""
    module._gram_ready = None


class EMATeacherSelfSupervisor(BaseSelfSupervisor):
    """A self-supervisor with an EMA teacher and an optional Gram teacher.

    ``self.teacher`` (a ``ModuleDict``) holds a frozen copy of every module
    of :meth:`student_modules`; ``TeacherEMAHook`` calls
    :meth:`update_teacher`. With ``build_teachers(gram=True)`` a frozen copy
    of the backbone, ``self.gram_teacher``, is set to the teacher's backbone
    by :meth:`update_gram_teacher` (``GramTeacherHook``); the buffer
    ``gram_teacher_updates`` counts the updates. Both live in the state
    dict, so checkpoints hold them and a resume restores them exactly.
    """

    def student_modules(self) -> Dict[str, nn.Module]:
        """Student modules that have an EMA twin in ``self.teacher``."""
        modules = dict(backbone=self.backbone, head=self.head)
        if getattr(self, 'patch_head', None) is not None:
            modules['patch_head'] = self.patch_head
        return modules

    def build_teachers(self, gram: bool) -> None:
        """Create the teacher copies (call once the student is built)."""
        self.teacher = nn.ModuleDict(
            {
                k: strip_for_teacher(copy.deepcopy(m))
                for k, m in self.student_modules().items()
            }
        )
        if gram:
            self.gram_teacher = strip_for_teacher(copy.deepcopy(self.backbone))
            self.register_buffer(
                'gram_teacher_updates', torch.zeros((), dtype=torch.long)
            )
            self._gram_ready = None  # unknown until read
            self.register_load_state_dict_post_hook(_forget_gram_flag)

    def __init__(self, *args, warm_start: Optional[dict] = None, **kwargs):
        super().__init__(*args, **kwargs)
        #: ``model.warm_start`` of the config: start student and teacher
        #: from a released backbone or a previous stage (docs/en/
        #: warm_start.md, :func:`mmssl.checkpoint.warm_start.
        #: apply_warm_start`).
        self.warm_start = warm_start

    def init_weights(self) -> None:
        """Initialise the student, start the teachers from it, then apply
        ``warm_start`` when the config sets one."""
        super().init_weights()
        for name, module in self.student_modules().items():
            self.teacher[name].load_state_dict(module.state_dict())
        if self.warm_start:
            apply_warm_start(self, self.warm_start)
        full = (self.warm_start or {}).get('format') == 'mmssl_full'
        if hasattr(self, 'gram_teacher') and not full:
            self.gram_teacher.load_state_dict(
                self.teacher['backbone'].state_dict()
            )

    @torch.no_grad()
    def update_teacher(
        self, momentum: float, skip: Optional[Tensor] = None
    ) -> None:
        """EMA step: ``teacher = m * teacher + (1 - m) * student``, with
        torch's ``_foreach`` kernels (a few launches for all parameters).

        Args:
            momentum (float): m.
            skip (Tensor, optional): 0-dim device flag, 1.0 where the
                optimiser skipped the step: m becomes 1 on the device (no
                host sync). The scaled student then passes through
                temporaries of at most ``_EMA_CHUNK`` elements.
        """
        for name, module in self.student_modules().items():
            t_params = list(self.teacher[name].parameters())
            s_params = [p.detach() for p in module.parameters()]
            if skip is None:
                torch._foreach_mul_(t_params, momentum)
                torch._foreach_add_(t_params, s_params, alpha=1.0 - momentum)
                continue
            m = skip.to(t_params[0]) * (1.0 - momentum) + momentum  # 0-dim
            for t_chunk, s_chunk in _chunks(t_params, s_params):
                torch._foreach_mul_(t_chunk, m)
                torch._foreach_add_(
                    t_chunk, torch._foreach_mul(s_chunk, 1 - m)
                )

    def _gram_started(self) -> bool:
        """Whether the Gram teacher has had a snapshot. The device count
        is read once after a build or a ``load_state_dict`` (resume);
        snapshots set the host flag, so the step does not sync for it."""
        if getattr(self, '_gram_ready', None) is None:
            self._gram_ready = bool(int(self.gram_teacher_updates) > 0)
        return self._gram_ready

    @torch.no_grad()
    def update_gram_teacher(self) -> None:
        """Gram teacher := a snapshot of the EMA teacher's backbone."""
        if not hasattr(self, 'gram_teacher'):
            raise AttributeError(
                f'{type(self).__name__} has no Gram teacher: add a gram term.'
            )
        self.gram_teacher.load_state_dict(
            self.teacher['backbone'].state_dict()
        )
        self.gram_teacher_updates += 1
        self._gram_ready = True

    def extract_feat(self, inputs) -> Tensor:
        """Teacher backbone CLS / pooled features (B, C), used for kNN."""
        if isinstance(inputs, (list, tuple)):
            inputs = inputs[0]
        with torch.no_grad():
            return forward_backbone(self.teacher['backbone'], inputs)[0]
