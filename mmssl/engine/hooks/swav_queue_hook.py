"""SwAV's feature queue, kept in checkpoints for an exact resume."""

from typing import Optional

from mmengine.device import get_device
from mmengine.model import is_model_wrapper
from mmpretrain.engine.hooks import SwAVHook

from mmssl.registry import HOOKS


def _loss_module(runner):
    model = (
        runner.model.module if is_model_wrapper(runner.model) else runner.model
    )
    return model.head.loss_module


@HOOKS.register_module()
class SwAVQueueHook(SwAVHook):
    """mmpretrain's ``SwAVHook`` with the queue saved in every checkpoint.

    mmpretrain writes the queue to ``work_dir/queue.pth`` at each epoch end
    and reads it back when a run starts, so a run resumed inside an epoch
    continues with the queue of the last epoch end (or none), and with
    ``use_queue`` reset. This hook stores the queue and ``use_queue`` under
    ``checkpoint['swav_queue']`` instead (no files in the work dir) and
    restores both on resume; at an epoch start ``use_queue`` is reset as
    in mmpretrain. Arguments are those of mmpretrain's ``SwAVHook``.

    With several processes each rank keeps its own queue; the checkpoint
    holds rank 0's, which every rank resumes with.
    """

    CKPT_KEY = 'swav_queue'

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._loaded: Optional[dict] = None

    def before_run(self, runner) -> None:
        # the queue length must be a multiple of the total batch size
        self.queue_length -= self.queue_length % self.batch_size

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        loss = _loss_module(runner)
        queue = loss.queue
        checkpoint[self.CKPT_KEY] = dict(
            queue=None if queue is None else queue.detach().cpu().clone(),
            use_queue=bool(loss.use_queue),
        )

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        self._loaded = checkpoint.get(self.CKPT_KEY)

    def before_train(self, runner) -> None:
        # only a resume continues the queue (``load_from`` starts at 0)
        if self._loaded is None or runner.iter == 0:
            self._loaded = None
            return
        queue = self._loaded['queue']
        self.queue = None if queue is None else queue.to(get_device())

    def before_train_epoch(self, runner) -> None:
        super().before_train_epoch(runner)
        loop = getattr(runner, 'train_loop', None)
        inside = getattr(loop, 'resume_batches', 0) > 0
        if self._loaded is not None and inside:
            _loss_module(runner).use_queue = self._loaded['use_queue']
        self._loaded = None

    def after_train_epoch(self, runner) -> None:
        self.queue = _loss_module(runner).queue
