"""The position and random-state bookkeeping of mmssl's train loops.

See :mod:`mmssl.engine.runner.loops` for how a resume uses it.
"""

import logging
from typing import Any, Dict, Optional, Tuple

from mmengine.dataset import InfiniteSampler
from mmengine.dist import get_rank
from mmengine.logging import print_log

from .data import ResumableData
from .rng import get_rng_state, seed_epoch, set_rng_state

LOOP_STATE_VERSION = 1


class ResumableLoopMixin:
    """Data position, random states and the start of an epoch's iterator.

    Subclasses keep ``_data_epoch`` (the sampler's epoch), ``_batches``
    (batches of it trained on) and ``_iters_done`` (iterations completed,
    counting the one whose ``after_train_iter`` hooks are running).
    """

    def _init_position(self, sample_seeds: bool) -> None:
        self._data = ResumableData(self.dataloader, sample_seeds)
        self._data_epoch = 0
        self._batches = 0
        self._iters_done = 0
        self._resume_at: Optional[Tuple[int, int, Optional[dict]]] = None
        self._boundary_rng: Optional[dict] = None

    @property
    def resume_batches(self) -> int:
        """Batches of the epoch about to start that a resume skips.

        Non-zero only from the resume until that epoch's first batch is
        drawn, e.g. in ``before_train_epoch``: a hook that prepares an
        epoch (re-clustering) keeps the state from the checkpoint then.
        """
        return self._resume_at[1] if self._resume_at is not None else 0

    # ------------------------------------------------------------ state
    def state_dict(self) -> Dict[str, Any]:
        """Where the data stream stands, and the random states now.

        Returns:
            dict: ``epoch`` (data epoch, 0-based), ``batches`` (batches of
            it trained on), ``iter`` (iterations completed),
            ``epoch_length`` and ``rng`` (:func:`get_rng_state`), only
            builtins and tensors.
        """
        return dict(
            version=LOOP_STATE_VERSION,
            epoch=int(self._data_epoch),
            batches=int(self._batches),
            iter=int(self._iters_done),
            epoch_length=len(self.dataloader),
            rng=self._boundary_rng or get_rng_state(),
        )

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continue after the position in ``state`` (from a checkpoint).

        Args:
            state (dict): Output of :meth:`state_dict`.
        """
        epoch, batches = int(state['epoch']), int(state['batches'])
        length = len(self.dataloader)
        if state.get('epoch_length', length) != length:
            print_log(
                f'The checkpoint was saved with {state["epoch_length"]} '
                f'batches per epoch, the loader now has {length}: the '
                'resumed epoch continues at the same batch number.',
                logger='current',
                level=logging.WARNING,
            )
        rng = state.get('rng')
        if batches >= length and not self._infinite():
            epoch, batches, rng = epoch + 1, 0, None
        self._set_counters(epoch, int(state['iter']))
        self._resume_at = (epoch, batches, rng)

    def _set_counters(self, data_epoch: int, iters: int) -> None:
        self._data_epoch = data_epoch
        self._iter = self._iters_done = iters

    def _infinite(self) -> bool:
        sampler = getattr(self.dataloader.batch_sampler, 'sampler', None)
        return isinstance(sampler, InfiniteSampler)

    def _position_from_meta(self) -> Tuple[int, int]:
        """(data epoch, batches) implied by ``_epoch``/``_iter`` alone.

        Used when the checkpoint has no ``loop_state`` (a plain mmengine
        checkpoint): the position is exact for a constant epoch length,
        the random states are not restored.
        """
        raise NotImplementedError

    def _prepare_resume(self) -> None:
        """Before the first epoch: the position of a plain mmengine resume.

        When ``load_state_dict`` was not called but the runner resumed
        (``_iter > 0``), the position is inferred from the iteration and
        epoch counts of the checkpoint's meta.
        """
        if self._resume_at is not None or self._iter == 0:
            return
        epoch, skip = self._position_from_meta()
        if skip:
            print_log(
                'The checkpoint has no loop_state: resuming at batch '
                f'{skip} of epoch {epoch + 1} from its iteration count; '
                'random states are not restored.',
                logger='current',
                level=logging.WARNING,
            )
        self._set_counters(epoch, self._iter)
        self._resume_at = (epoch, skip, None)

    def _take_resume_position(self) -> Tuple[int, Optional[dict]]:
        """(batches to skip, random states) for the epoch starting now."""
        if self._resume_at is None:
            return 0, None
        _, skip, rng = self._resume_at
        self._resume_at = None
        if skip:
            print_log(
                f'Resuming inside epoch {self._data_epoch + 1}: skipping '
                f'its first {skip} batches without loading them.',
                logger='current',
            )
        return skip, rng

    def _epoch_iterator(self, skip: int, rng: Optional[dict]):
        """Re-seed, start the epoch's batches at ``skip``, restore ``rng``."""
        runner = self.runner
        rank = get_rank()
        seed_epoch(runner.seed, self._data_epoch, rank)
        self._batches = skip
        iterator = self._data.iterate(
            self._data_epoch, skip, runner.seed, rank
        )
        if rng is not None:
            set_rng_state(rng)
        return iterator

    def _validate(self) -> None:
        # A checkpoint saved during validation (save_best) must hold the
        # training random states, not the ones validation is drawing from.
        self._boundary_rng = get_rng_state()
        try:
            self.runner.val_loop.run()
        finally:
            set_rng_state(self._boundary_rng)
            self._boundary_rng = None
