"""A CheckpointHook that never leaves a run without a resumable checkpoint."""

import os.path as osp
import random
from typing import Any, Dict, Optional

import numpy as np
import torch
from mmengine.dist import is_main_process
from mmengine.hooks import CheckpointHook

from mmssl.checkpoint import atomic_write_text, set_checkpoint_trust
from mmssl.registry import HOOKS

RNG_KEY = 'rng_state'


def get_rng_state() -> Dict[str, Any]:
    """Capture python ``random``, numpy, torch CPU and CUDA RNG states.

    Everything is stored as builtins or tensors, so the states load under
    weights-only unpickling without widening the allowlist.

    Returns:
        dict: Keys ``python``, ``numpy``, ``torch`` and, with CUDA,
        ``cuda`` (one ByteTensor per device).
    """
    name, key, pos, has_gauss, gauss = np.random.get_state()
    state = dict(
        python=random.getstate(),
        numpy=dict(
            bit_generator=str(name),
            key=torch.from_numpy(np.asarray(key, dtype=np.int64)),
            pos=int(pos),
            has_gauss=int(has_gauss),
            gauss=float(gauss),
        ),
        torch=torch.get_rng_state(),
    )
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state['cuda'] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Dict[str, Any]) -> None:
    """Restore states captured by :func:`get_rng_state`.

    Args:
        state (dict): Output of :func:`get_rng_state`.
    """
    py = state['python']
    # Pickle round trips may turn the inner tuple into a list.
    random.setstate((py[0], tuple(py[1]), py[2]))
    npy = state['numpy']
    np.random.set_state(
        (
            npy['bit_generator'],
            npy['key'].numpy().astype(np.uint32),
            npy['pos'],
            npy['has_gauss'],
            npy['gauss'],
        )
    )
    torch.set_rng_state(state['torch'].cpu())
    cuda = state.get('cuda')
    if cuda is not None and torch.cuda.is_available():
        if len(cuda) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all([s.cpu() for s in cuda])
        else:
            torch.cuda.manual_seed_all(int(cuda[0][:8].sum()))


@HOOKS.register_module()
class AtomicCheckpointHook(CheckpointHook):
    """mmengine's CheckpointHook with crash-safe saving and RNG states.

    Differences from :class:`mmengine.hooks.CheckpointHook`:

    * With mmssl's runner (``runner_type = 'SSLRunner'``) a checkpoint is
      written to a temporary file in the same folder and renamed onto its
      final name only once complete (:meth:`SSLRunner.save_checkpoint`).
    * ``last_checkpoint`` is rewritten atomically and only after the new
      checkpoint is complete; the oldest checkpoint beyond
      ``max_keep_ckpts`` is deleted only after that. (mmengine deletes it
      *before* saving, so a kill mid-save with ``max_keep_ckpts=1`` leaves
      nothing to resume from.)
    * The python, numpy, torch and CUDA RNG states are stored under
      ``checkpoint['rng_state']`` and restored on resume, so
      epoch-based training resumed at a checkpoint draws the same data
      order and augmentations as an uninterrupted run. After a save at an
      epoch end the RNG is rewound to the saved state when the next epoch
      starts, so validation between epochs does not perturb training
      randomness in either run.
    * ``trust_checkpoint = True`` in the config trusts every checkpoint the
      run loads (see :mod:`mmssl.checkpoint.policy`).

    Args:
        save_rng_state (bool): Save and restore RNG states. Defaults to True.
        **kwargs: Arguments of :class:`mmengine.hooks.CheckpointHook`.
    """

    def __init__(self, *args, save_rng_state: bool = True, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.save_rng_state = save_rng_state
        self._loaded_rng: Optional[tuple] = None
        self._pending_rng: Optional[Dict[str, Any]] = None
        self._periodic_save = False

    # ------------------------------------------------------------ trust
    def before_run(self, runner) -> None:
        cfg = getattr(runner, 'cfg', None)
        if cfg is not None and cfg.get('trust_checkpoint', False):
            runner.logger.warning(
                'trust_checkpoint=True: checkpoints are fully unpickled; '
                'only load files you trust.'
            )
            set_checkpoint_trust(True)
        super().before_run(runner)

    # ------------------------------------------------------------ RNG
    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        if not self.save_rng_state:
            return
        state = get_rng_state()
        checkpoint[RNG_KEY] = state
        if self.by_epoch and self._periodic_save:
            self._pending_rng = state

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        state = checkpoint.get(RNG_KEY) if self.save_rng_state else None
        meta = checkpoint.get('meta', {}) or {}
        self._loaded_rng = (state, meta.get('iter'), meta.get('epoch'))

    def before_train(self, runner) -> None:
        super().before_train(runner)
        # ``Runner.resume`` set the loop counters from the checkpoint after
        # ``after_load_checkpoint``; a plain ``load_from`` leaves them at 0.
        if self._loaded_rng is not None:
            state, it, epoch = self._loaded_rng
            self._loaded_rng = None
            if (
                state is not None
                and it
                and runner.iter == it
                and runner.epoch == epoch
            ):
                self._pending_rng = state
                if not self.by_epoch:
                    set_rng_state(state)
                    self._pending_rng = None
                runner.logger.info(
                    'RNG states will be restored from the resumed checkpoint.'
                )

    def before_train_epoch(self, runner) -> None:
        if self._pending_rng is not None:
            set_rng_state(self._pending_rng)
            self._pending_rng = None

    # ------------------------------------------------------------ saving
    def _save_checkpoint_with_step(self, runner, step, meta):
        to_remove = None
        if self.max_keep_ckpts > 0:
            if not (
                len(self.keep_ckpt_ids) > 0 and self.keep_ckpt_ids[-1] == step
            ):
                if len(self.keep_ckpt_ids) == self.max_keep_ckpts:
                    to_remove = self.keep_ckpt_ids.popleft()
                self.keep_ckpt_ids.append(step)
                # Saved inside the new checkpoint, so it is updated first.
                runner.message_hub.update_info(
                    'keep_ckpt_ids', list(self.keep_ckpt_ids)
                )

        ckpt_filename = self.filename_tmpl.format(step)
        new_ckpt = self.file_backend.join_path(self.out_dir, ckpt_filename)
        previous = self.last_ckpt
        self.last_ckpt = new_ckpt
        runner.message_hub.update_info('last_ckpt', new_ckpt)
        self._periodic_save = True
        try:
            # SSLRunner.save_checkpoint is atomic for local paths.
            runner.save_checkpoint(
                self.out_dir,
                ckpt_filename,
                self.file_client_args,
                save_optimizer=self.save_optimizer,
                save_param_scheduler=self.save_param_scheduler,
                meta=meta,
                by_epoch=self.by_epoch,
                backend_args=self.backend_args,
                **self.args,
            )
        except BaseException:
            self.last_ckpt = previous
            raise
        finally:
            self._periodic_save = False

        if not is_main_process():
            return
        atomic_write_text(
            new_ckpt, osp.join(runner.work_dir, 'last_checkpoint')
        )
        if to_remove is not None and to_remove != step:
            old = self.file_backend.join_path(
                self.out_dir, self.filename_tmpl.format(to_remove)
            )
            if self.file_backend.isfile(old):
                self.file_backend.remove(old)
            elif self.file_backend.isdir(old):
                # checkpoints saved by deepspeed are directories
                self.file_backend.rmtree(old)
