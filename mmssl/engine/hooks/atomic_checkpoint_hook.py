"""A CheckpointHook that never leaves a run without a resumable checkpoint."""

import os.path as osp
import warnings
from typing import Union

from mmengine.dist import is_main_process
from mmengine.hooks import CheckpointHook

from mmssl.checkpoint import atomic_write_text, set_checkpoint_trust
from mmssl.registry import HOOKS


@HOOKS.register_module()
class AtomicCheckpointHook(CheckpointHook):
    """mmengine's CheckpointHook with crash-safe saving and pruning.

    Differences from :class:`mmengine.hooks.CheckpointHook`:

    * With mmssl's runner (``runner_type = 'SSLRunner'``) a checkpoint is
      written to a temporary file in the same folder and renamed onto its
      final name only once complete (:meth:`SSLRunner.save_checkpoint`).
    * ``last_checkpoint`` is rewritten atomically and only after the new
      checkpoint is complete; the oldest checkpoint beyond
      ``max_keep_ckpts`` is deleted only after that. (mmengine deletes it
      *before* saving, so a kill mid-save with ``max_keep_ckpts=1`` leaves
      nothing to resume from.)
    * ``trust_checkpoint = True`` in the config trusts every checkpoint the
      run loads (see :mod:`mmssl.checkpoint.policy`).

    * ``sharded``: checkpoints as sharded DCP folders (docs/en/fsdp.md,
      :mod:`mmssl.engine.resume.sharded`), which keep the
      names, retention, atomicity and ``--resume`` rules of files.

    Random states and the data position are not this hook's job: mmssl's
    train loops save them (``checkpoint['loop_state']``, see
    :mod:`mmssl.engine.runner.loops`) whichever checkpoint hook a config
    names.

    Args:
        sharded (bool | str): ``'auto'``: sharded folders exactly when the
            model is FSDP2 (``MMFullyShard``); True: also without FSDP2;
            False: ordinary files, refused with FSDP2. Defaults to
            ``'auto'``.
        save_rng_state (bool): Ignored; kept so that older configs build.
        **kwargs: Arguments of :class:`mmengine.hooks.CheckpointHook`.
    """

    def __init__(
        self,
        *args,
        sharded: Union[bool, str] = 'auto',
        save_rng_state: bool = True,
        **kwargs,
    ) -> None:
        if sharded not in (True, False, 'auto'):
            raise ValueError(
                f'AtomicCheckpointHook(sharded={sharded!r}): use True, '
                "False or 'auto' (sharded exactly with FSDP2)."
            )
        self.sharded = sharded
        super().__init__(*args, **kwargs)
        if not save_rng_state:
            warnings.warn(
                'AtomicCheckpointHook(save_rng_state=False) has no effect: '
                "random states are saved by mmssl's train loops."
            )

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
