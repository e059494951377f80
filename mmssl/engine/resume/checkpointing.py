"""How :class:`~mmssl.engine.runner.SSLRunner` saves and loads checkpoints.

A mixin of ``SSLRunner`` (listed before mmengine's ``Runner``, so its
``super()`` calls reach ``Runner``). Every load runs under
:func:`mmssl.checkpoint.loading_policy`; local saves are atomic
(:func:`mmssl.checkpoint.atomic_destination`); the loop state and every
rank's buffers travel in each checkpoint; sharded (DCP) folders go through
:mod:`.sharded`.
"""

import os.path as osp
from typing import Any, Dict, List, Optional

from mmengine.dist import is_main_process
from mmengine.fileio import LocalBackend, get_file_backend

from mmssl.checkpoint import atomic_destination, loading_policy

from .rank_buffers import (
    RANK_BUFFERS_KEY,
    gather_rank_buffers,
    restore_rank_buffers,
)
from .sharded import (
    load_sharded_weights,
    resume_sharded,
    save_sharded_checkpoint,
)

LOOP_STATE_KEY = 'loop_state'


def _local_main_save(out_dir, file_client_args, backend_args) -> bool:
    """Whether this rank writes the file itself, to a local folder."""
    if file_client_args is not None or not is_main_process():
        return False
    backend = get_file_backend(out_dir, backend_args=backend_args)
    return isinstance(backend, LocalBackend)


#: What torch's ``Optimizer.load_state_dict`` says when the saved state's
#: parameter groups are not the ones the config builds.
PARAM_GROUP_MISMATCH = (
    'different number of parameter groups',
    "doesn't match the size of optimizer's group",
)


def is_param_group_mismatch(exc: BaseException) -> bool:
    """Whether ``exc`` is torch refusing an optimizer state whose
    parameter groups differ from the optimizer's."""
    return any(text in str(exc) for text in PARAM_GROUP_MISMATCH)


def optimizer_mismatch_error(filename: str, exc: BaseException):
    """One line for a checkpoint whose optimizer state does not fit the
    parameter groups this config builds (its ``paramwise_cfg``, e.g. the
    DINOv2 ``decay_rule``, or another model), with the two ways on."""
    from mmssl.errors import TrainConfigError

    return TrainConfigError(
        f'cannot resume from {filename}: its optimizer state does not fit '
        f'the parameter groups this config builds (torch: {exc}); the '
        "config's model or optim_wrapper.paramwise_cfg differs from the "
        'run that saved it. Resume with the config that run used, or start '
        'from its weights without the optimizer state and schedules: '
        f'--cfg-options load_from={filename} resume=False.'
    )


class CheckpointingMixin:
    """Loading under the policy; atomic saves with loop state and buffers."""

    _rank_buffers: Optional[List[Dict]] = None
    _loaded_rank_buffers: Optional[List[Dict]] = None
    #: Whether checkpoints are sharded folders (set in register_hooks).
    sharded_checkpoints: bool = False

    def _trust(self) -> Optional[bool]:
        """``trust_checkpoint`` from the config; None follows the env."""
        return True if self.cfg.get('trust_checkpoint', False) else None

    def load_checkpoint(
        self,
        filename: str,
        map_location: Any = 'cpu',
        strict: bool = False,
        revise_keys: list = [(r'^module.', '')],  # noqa: B006 (mmengine's)
    ) -> dict:
        """Load ``filename`` into the model under mmssl's loading policy.

        Also called by :meth:`resume`; the loop state the checkpoint holds
        is kept for it. A sharded checkpoint folder gives its weights.
        """
        if osp.isdir(str(filename)):
            return load_sharded_weights(self, filename)
        with loading_policy(self._trust(), source=str(filename)):
            checkpoint = super().load_checkpoint(
                filename, map_location, strict, revise_keys
            )
        self._loaded_loop_state = checkpoint.get(LOOP_STATE_KEY)
        self._loaded_rank_buffers = checkpoint.get(RANK_BUFFERS_KEY)
        return checkpoint

    def resume(self, filename: str, *args, **kwargs) -> None:
        """mmengine's resume, then each rank's buffers and the loop state."""
        self._loaded_loop_state = self._loaded_rank_buffers = None
        if osp.isdir(str(filename)):
            options = {k: v for k, v in kwargs.items() if 'map' not in k}
            checkpoint = resume_sharded(self, filename, *args[:2], **options)
            self._loaded_loop_state = checkpoint.get(LOOP_STATE_KEY)
            self._loaded_rank_buffers = checkpoint.get(RANK_BUFFERS_KEY)
        else:
            try:
                super().resume(filename, *args, **kwargs)
            except ValueError as exc:
                if not is_param_group_mismatch(exc):
                    raise
                raise optimizer_mismatch_error(filename, exc) from exc
        # this rank's own buffers (e.g. BatchNorm statistics), not rank 0's
        restore_rank_buffers(
            self.model, self._loaded_rank_buffers, self.logger
        )
        self._loaded_rank_buffers = None
        state, self._loaded_loop_state = self._loaded_loop_state, None
        loop = self.train_loop
        if state is not None and hasattr(loop, 'load_state_dict'):
            loop.load_state_dict(state)
        elif hasattr(loop, 'load_state_dict'):
            self.logger.warning(
                f'{filename} has no loop state (written by another runner '
                'or an older mmssl); resuming from its epoch/iter counters '
                'only.'
            )

    def _init_model_weights(self) -> None:
        """``init_weights`` (``init_cfg`` Pretrained) under the policy.

        A wrapper that initialised the weights before sharding them
        (``MMFullyShard``) says so with ``weights_initialized``.
        """
        if getattr(self.model, 'weights_initialized', False):
            return
        with loading_policy(self._trust(), source='init_cfg'):
            super()._init_model_weights()

    # ------------------------------------------------------------ saving
    def call_hook(self, fn_name: str, **kwargs) -> None:
        """Call hooks; before ``before_save_checkpoint`` add the loop state.

        The loop state (data position, RNG states) is part of every
        checkpoint this runner writes, whichever checkpoint hook the
        config names.
        """
        if fn_name == 'before_save_checkpoint':
            loop = self._train_loop
            if hasattr(loop, 'state_dict'):
                kwargs['checkpoint'][LOOP_STATE_KEY] = loop.state_dict()
            if self._rank_buffers is not None:
                kwargs['checkpoint'][RANK_BUFFERS_KEY] = self._rank_buffers
        super().call_hook(fn_name, **kwargs)

    def save_checkpoint(
        self,
        out_dir: str,
        filename: str,
        file_client_args: Optional[dict] = None,
        *args,
        backend_args: Optional[dict] = None,
        **kwargs,
    ) -> None:
        """mmengine's ``save_checkpoint``, atomic for local folders.

        The checkpoint is written by the parent under a hidden temporary
        name in ``out_dir``, fsynced, then renamed onto ``filename``: a
        process killed during the save leaves the previous files intact
        and nothing partial under a checkpoint's name. With
        :attr:`sharded_checkpoints`, ``filename`` is a folder written by
        every rank (:func:`.sharded.save_sharded_checkpoint`).
        """
        # every rank's buffers, gathered here: the parent is master_only
        self._rank_buffers = gather_rank_buffers(self.model)
        options = dict(backend_args=backend_args, **kwargs)
        try:
            if self.sharded_checkpoints:
                save_sharded_checkpoint(
                    self,
                    out_dir,
                    filename,
                    *args,
                    file_client_args=file_client_args,
                    **options,
                )
            elif _local_main_save(out_dir, file_client_args, backend_args):
                final = osp.join(out_dir, filename)
                with atomic_destination(final) as tmp:
                    super().save_checkpoint(
                        osp.dirname(tmp),
                        osp.basename(tmp),
                        None,
                        *args,
                        **options,
                    )
            else:  # the parent is master_only: other ranks do nothing
                super().save_checkpoint(
                    out_dir, filename, file_client_args, *args, **options
                )
        finally:
            self._rank_buffers = None
