"""Refreshes the Gram teacher of DINOv3 from the EMA teacher."""

from typing import Optional

from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper

from mmssl.registry import HOOKS


@HOOKS.register_module()
class GramTeacherHook(Hook):
    """Snapshot the EMA teacher into the Gram teacher on a schedule.

    Gram anchoring (DINOv3, Simeoni et al. 2025,
    https://arxiv.org/abs/2508.10104) compares the student's patch
    similarities with those of a frozen *Gram teacher*, an earlier copy of
    the EMA teacher that is refreshed every ``period`` iterations. Before
    iteration ``first_update + k * period`` (k = 0, 1, ...) the model's
    ``update_gram_teacher()`` copies the EMA teacher's backbone into the
    Gram teacher, at most ``max_updates`` times in all (DINOv3's ViT-7B
    Gram stage: every 10,000 iterations from iteration 1,010,000, 3 times).
    A run that starts past a due point without any snapshot (e.g.
    ``load_from`` a checkpoint of the first stage) takes one at once.

    The decision depends on ``runner.iter`` and on the model buffer
    ``gram_teacher_updates`` only, and the Gram teacher's weights are part
    of the model's state dict, so checkpoints hold them and a resume
    continues exactly. The update count is logged as
    ``gram_teacher_updates``.

    Args:
        first_update (int): Iteration before which the first snapshot is
            taken. Defaults to 0.
        period (int, optional): Iterations between snapshots; ``None``
            takes a single one. Defaults to None.
        max_updates (int, optional): Most snapshots in all (``None``: no
            limit). Defaults to None.
    """

    priority = 'ABOVE_NORMAL'

    def __init__(
        self,
        first_update: int = 0,
        period: Optional[int] = None,
        max_updates: Optional[int] = None,
    ) -> None:
        if first_update < 0 or (period is not None and period < 1):
            raise ValueError(
                'GramTeacherHook needs first_update >= 0 and period >= 1 '
                f'(or None), got {first_update} and {period}.'
            )
        self.first_update = int(first_update)
        self.period = period
        self.max_updates = max_updates

    def is_due(self, it: int, done: int) -> bool:
        """Whether a snapshot is taken before iteration ``it``."""
        if it < self.first_update:
            return False
        if self.max_updates is not None and done >= self.max_updates:
            return False
        if self.period is None:
            return it == self.first_update or done == 0
        return (it - self.first_update) % self.period == 0 or done == 0

    def before_train_iter(
        self, runner, batch_idx: int, data_batch: Optional[dict] = None
    ) -> None:
        model = (
            runner.model.module
            if is_model_wrapper(runner.model)
            else runner.model
        )
        if not hasattr(model, 'update_gram_teacher'):
            raise TypeError(
                'GramTeacherHook needs a model with a Gram teacher (a '
                f"DINOFamily with a 'gram' term); got {type(model).__name__}."
            )
        done = int(model.gram_teacher_updates)
        if self.is_due(runner.iter, done):
            model.update_gram_teacher()
            done += 1
        runner.message_hub.update_scalar('train/gram_teacher_updates', done)
