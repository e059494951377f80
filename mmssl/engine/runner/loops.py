"""Train loops that resume exactly from any checkpoint.

mmengine's loops restart an interrupted epoch from its first batch (the
global iteration count then overshoots ``max_iters``, schedules run past
their end and the ETA goes negative), and its iteration loop skips by
loading every skipped batch. mmssl's loops keep a *data position*
(epoch, batches of it already trained on) and the random states at the
last iteration boundary in :meth:`state_dict`, which mmssl's runner saves
in every checkpoint as ``checkpoint['loop_state']``. After
:meth:`load_state_dict` the run continues with the next unseen batch:

1. the epoch's hooks run (sampler epoch, clustering, ...),
2. the random states are re-seeded from ``(seed, epoch, rank)``
   (:func:`~mmssl.engine.resume.rng.seed_epoch`), in the straight run
   and in the resumed one alike,
3. the epoch's sampler is started and its first ``k`` index batches are
   dropped without loading a sample (:class:`SkipBatchSampler`),
4. the random states of the checkpoint are restored,
5. training goes on with batch ``k``.

Re-seeding at every epoch start (step 2) makes an epoch's randomness
independent of whatever ran between epochs (validation, kNN evaluation,
re-clustering: they all draw from the global generators), so an epoch
checkpoint needs no random state at all. Validation additionally runs
with the random states put back afterwards, which matters for
iteration-based runs that validate between iterations.

With ``sample_seeds=True`` (the default) every sample's transforms are
seeded from ``(seed, epoch, rank, position)``, which makes resume exact
with DataLoader workers too (docs/en/checkpoints.md).
"""

from typing import Sequence, Tuple

from mmengine.runner import EpochBasedTrainLoop, IterBasedTrainLoop
from mmengine.runner.base_loop import BaseLoop
from mmengine.runner.utils import calc_dynamic_intervals

from mmssl.engine.resume.loop_state import ResumableLoopMixin
from mmssl.registry import LOOPS


def _train_step(loop, idx: int, data_batch: Sequence[dict]) -> None:
    """One training iteration of ``loop``: the step itself.

    The ``before_train_iter`` hooks, ``model.train_step`` (data
    preprocessor, ``forward(mode='loss')``, then
    ``optim_wrapper.update_params``: backward, optimizer step, zero
    grad), then the ``after_train_iter`` hooks (teacher EMA, logging,
    checkpoints). The data position is updated before the
    ``after_train_iter`` hooks, so a checkpoint saved there resumes with
    the next batch.

    Args:
        loop (ResumableLoopMixin): The train loop.
        idx (int): Index of the batch (in the epoch, or the iteration).
        data_batch (Sequence[dict]): The batch from the dataloader.
    """
    runner = loop.runner
    runner.call_hook('before_train_iter', batch_idx=idx, data_batch=data_batch)
    outputs = runner.model.train_step(
        data_batch, optim_wrapper=runner.optim_wrapper
    )
    loop._batches += 1
    loop._iters_done = loop._iter + 1
    runner.call_hook(
        'after_train_iter',
        batch_idx=idx,
        data_batch=data_batch,
        outputs=outputs,
    )
    loop._iter += 1


@LOOPS.register_module()
class ResumableEpochBasedTrainLoop(ResumableLoopMixin, EpochBasedTrainLoop):
    """:class:`mmengine.runner.EpochBasedTrainLoop` that resumes exactly.

    See the module docstring. Setting ``stop_training`` inside an epoch
    stops at the next iteration boundary without ending the epoch (no
    ``after_train_epoch``), so a checkpoint saved then resumes inside it.

    Args:
        runner (Runner): The runner.
        dataloader (DataLoader | dict): The training loader.
        max_epochs (int): Total epochs.
        val_begin (int): First epoch that validates. Defaults to 1.
        val_interval (int): Validation interval. Defaults to 1.
        dynamic_intervals (list[tuple[int, int]], optional): As in
            mmengine. Defaults to None.
        sample_seeds (bool): Seed each sample's transforms from
            ``(seed, epoch, rank, position)``. Defaults to True.
    """

    def __init__(
        self,
        runner,
        dataloader,
        max_epochs: int,
        val_begin: int = 1,
        val_interval: int = 1,
        dynamic_intervals=None,
        sample_seeds: bool = True,
    ) -> None:
        super().__init__(
            runner,
            dataloader,
            max_epochs,
            val_begin=val_begin,
            val_interval=val_interval,
            dynamic_intervals=dynamic_intervals,
        )
        self._init_position(sample_seeds)

    def _set_counters(self, data_epoch: int, iters: int) -> None:
        super()._set_counters(data_epoch, iters)
        self._epoch = data_epoch

    def _position_from_meta(self) -> Tuple[int, int]:
        length = len(self.dataloader)
        done = max(self._iter - self._epoch * length, 0)
        return self._epoch + done // length, done % length

    def run(self):
        """Train until ``max_epochs``; validate every ``val_interval``."""
        self._prepare_resume()
        self.runner.call_hook('before_train')
        while self._epoch < self._max_epochs and not self.stop_training:
            if not self.run_epoch():
                break
            self._decide_current_val_interval()
            if (
                self.runner.val_loop is not None
                and self._epoch >= self.val_begin
                and (
                    self._epoch % self.val_interval == 0
                    or self._epoch == self._max_epochs
                )
            ):
                self._validate()
        self.runner.call_hook('after_train')
        return self.runner.model

    def run_epoch(self) -> bool:
        """Train one epoch, or the rest of a resumed one.

        Returns:
            bool: False when ``stop_training`` interrupted the epoch.
        """
        self.runner.call_hook('before_train_epoch')
        self.runner.model.train()
        skip, rng = self._take_resume_position()
        for idx, data_batch in enumerate(
            self._epoch_iterator(skip, rng), start=skip
        ):
            self.run_iter(idx, data_batch)
            if self.stop_training:
                if self._batches < len(self.dataloader):
                    return False
        self.runner.call_hook('after_train_epoch')
        self._epoch += 1
        self._data_epoch = self._epoch
        self._batches = 0
        return True

    def run_iter(self, idx, data_batch: Sequence[dict]) -> None:
        """Train on one batch (``idx``: its index in the epoch)."""
        _train_step(self, idx, data_batch)


@LOOPS.register_module()
class ResumableIterBasedTrainLoop(ResumableLoopMixin, IterBasedTrainLoop):
    """:class:`mmengine.runner.IterBasedTrainLoop` that resumes exactly.

    Unlike mmengine's, a resumed run does not load the batches it skips,
    and building the loop does not start the loader. When a finite
    sampler runs out, the next data epoch starts (``set_epoch(e + 1)``,
    re-seeded like an epoch of the epoch loop).

    Args:
        runner (Runner): The runner.
        dataloader (DataLoader | dict): The training loader.
        max_iters (int): Total iterations.
        val_begin (int): First iteration that validates. Defaults to 1.
        val_interval (int): Validation interval. Defaults to 1000.
        dynamic_intervals (list[tuple[int, int]], optional): As in
            mmengine. Defaults to None.
        sample_seeds (bool): As in :class:`ResumableEpochBasedTrainLoop`.
            Defaults to True.
    """

    def __init__(
        self,
        runner,
        dataloader,
        max_iters: int,
        val_begin: int = 1,
        val_interval: int = 1000,
        dynamic_intervals=None,
        sample_seeds: bool = True,
    ) -> None:
        # Not IterBasedTrainLoop.__init__: it starts iterating the loader.
        BaseLoop.__init__(self, runner, dataloader)
        self._max_iters = int(max_iters)
        if self._max_iters != max_iters:
            raise ValueError(f'max_iters must be an integer, got {max_iters}')
        self._max_epochs = 1
        self._epoch = 0
        self._iter = 0
        self.val_begin = val_begin
        self.val_interval = val_interval
        self.stop_training = False
        meta = getattr(self.dataloader.dataset, 'metainfo', None)
        if meta is not None:
            self.runner.visualizer.dataset_meta = meta
        self.dynamic_milestones, self.dynamic_intervals = (
            calc_dynamic_intervals(self.val_interval, dynamic_intervals)
        )
        self._init_position(sample_seeds)

    def _position_from_meta(self) -> Tuple[int, int]:
        if self._infinite():
            return 0, self._iter
        return divmod(self._iter, len(self.dataloader))

    def _set_sampler_epoch(self) -> None:
        sampler = getattr(self.dataloader.batch_sampler, 'sampler', None)
        if hasattr(sampler, 'set_epoch'):
            sampler.set_epoch(self._data_epoch)

    def run(self):
        """Train until ``max_iters``; validate every ``val_interval``."""
        self._prepare_resume()
        self.runner.call_hook('before_train')
        # the whole run is one epoch for the hooks, as in mmengine
        self.runner.call_hook('before_train_epoch')
        skip, rng = self._take_resume_position()
        if self._data_epoch or skip:
            self._set_sampler_epoch()
        iterator = self._epoch_iterator(skip, rng)
        while self._iter < self._max_iters and not self.stop_training:
            self.runner.model.train()
            data_batch = next(iterator, None)
            if data_batch is None:  # a finite sampler ran out
                self._data_epoch += 1
                self._set_sampler_epoch()
                iterator = self._epoch_iterator(0, None)
                data_batch = next(iterator)
            self.run_iter(data_batch)
            self._decide_current_val_interval()
            if (
                self.runner.val_loop is not None
                and self._iter >= self.val_begin
                and (
                    self._iter % self.val_interval == 0
                    or self._iter == self._max_iters
                )
            ):
                self._validate()
        self.runner.call_hook('after_train_epoch')
        self.runner.call_hook('after_train')
        return self.runner.model

    def run_iter(self, data_batch: Sequence[dict]) -> None:
        """Train on one batch."""
        _train_step(self, self._iter, data_batch)


_RESUMABLE = {
    'EpochBasedTrainLoop': 'ResumableEpochBasedTrainLoop',
    EpochBasedTrainLoop: 'ResumableEpochBasedTrainLoop',
    'IterBasedTrainLoop': 'ResumableIterBasedTrainLoop',
    IterBasedTrainLoop: 'ResumableIterBasedTrainLoop',
}


def resumable_loop_cfg(loop):
    """``train_cfg`` with mmengine's plain loops replaced by mmssl's.

    ``type='EpochBasedTrainLoop'`` / ``'IterBasedTrainLoop'`` (or the
    classes, or mmengine's ``by_epoch=True/False`` shorthand) become
    :class:`ResumableEpochBasedTrainLoop` /
    :class:`ResumableIterBasedTrainLoop` with the same arguments. A
    scoped ``'mmengine.EpochBasedTrainLoop'`` keeps mmengine's loop;
    anything else is returned unchanged.

    Args:
        loop (dict | BaseLoop): The ``train_cfg`` (or a built loop).

    Returns:
        dict | BaseLoop: The config to build.
    """
    if not isinstance(loop, dict):
        return loop
    loop = dict(loop)
    if 'type' not in loop and 'by_epoch' in loop:
        by_epoch = loop.pop('by_epoch')
        loop['type'] = (
            'EpochBasedTrainLoop' if by_epoch else 'IterBasedTrainLoop'
        )
    kind = loop.get('type')
    try:
        loop['type'] = _RESUMABLE.get(kind, kind)
    except TypeError:  # unhashable
        pass
    if loop['type'] is not kind and '_scope_' in loop:
        # a loop inherited from an ``mmpretrain::`` config carries
        # ``_scope_='mmpretrain'``, whose registry lacks mmssl's loops
        loop['_scope_'] = 'mmssl'
    return loop
