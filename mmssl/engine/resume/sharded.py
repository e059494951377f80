"""Sharded (DCP) checkpoints of a training run, saved and resumed by
:class:`~mmssl.engine.runner.SSLRunner`.

A run whose model is wrapped by FSDP2
(:class:`~mmssl.models.wrappers.MMFullyShard`) saves every checkpoint as
a folder under the checkpoint's usual name (``iter_N.pth/``, as
mmengine's DeepSpeed checkpoints): each rank writes its own shards of the
model and optimizer with ``torch.distributed.checkpoint``, rank 0 adds
everything else an ordinary checkpoint holds (meta, message hub, param
schedulers, loop position and random states, other hooks' state) in one
file of the folder, and the folder only gets its final name once all of
it is written (:func:`mmssl.checkpoint.save_sharded`). ``--resume`` picks
the newest complete folder or file (:mod:`mmssl.launch.resume`) and
:func:`resume_sharded` loads it on any number of ranks: DCP reshards the
model and optimizer to the world size of the resumed run.

``default_hooks.checkpoint.sharded`` (:class:`AtomicCheckpointHook`)
chooses: ``'auto'`` (default) shards exactly when the model is FSDP2,
``True`` also without FSDP2 (e.g. to resume a 1-process run on 2 FSDP2
ranks), ``False`` refuses FSDP2 (:func:`sharded_checkpoints_wanted`).
"""

import os.path as osp
import time
from typing import Any, Optional

import mmengine
from mmengine.dist import is_main_process
from mmengine.hooks import CheckpointHook
from mmengine.model import is_model_wrapper
from mmengine.optim import OptimWrapper
from mmengine.utils import apply_to
from torch import nn

#: What the checkpoint's runner state records about the sharded part.
SHARDED_KEY = 'sharded'


def is_fully_sharded(model: nn.Module) -> bool:
    """Whether ``model`` is wrapped by FSDP2 (``MMFullyShard``)."""
    from mmssl.models.wrappers import MMFullyShard

    return isinstance(model, MMFullyShard)


def _module(model: nn.Module) -> nn.Module:
    return model.module if is_model_wrapper(model) else model


def sharded_checkpoints_wanted(runner) -> bool:
    """Whether ``runner`` saves sharded checkpoint folders.

    Sharded when the model is FSDP2 or a checkpoint hook says
    ``sharded=True``.

    Raises:
        ValueError: A checkpoint hook says ``sharded=False`` while the
            model is FSDP2: an ordinary checkpoint would pickle each
            rank's ``DTensor`` shards, which no other world size can load.
            Or a sharded run asks a hook to publish a file
            (``published_keys``).
    """
    fsdp = is_fully_sharded(runner.model)
    hooks = [h for h in runner.hooks if isinstance(h, CheckpointHook)]
    settings = [getattr(hook, 'sharded', 'auto') for hook in hooks]
    if fsdp and False in settings:
        raise ValueError(
            'default_hooks.checkpoint.sharded=False with '
            "model_wrapper_cfg.type='MMFullyShard': the parameters are "
            'DTensor shards and an ordinary checkpoint file would hold '
            "rank 0's shards only. Set default_hooks.checkpoint.sharded="
            "'auto' (or True) to save sharded folders; "
            'tools/model_converters/dcp_to_file.py turns one into a single '
            'file.'
        )
    sharded = fsdp or True in settings
    if sharded and any(h.published_keys is not None for h in hooks):
        raise ValueError(
            'default_hooks.checkpoint.published_keys publishes a checkpoint '
            'file after training, but this run saves sharded checkpoint '
            'folders. Remove published_keys; convert a folder with '
            'tools/model_converters/dcp_to_file.py and publish that file '
            '(tools/model_converters/publish_model.py).'
        )
    return sharded


def _optim_wrapper(runner) -> OptimWrapper:
    wrapper = runner.optim_wrapper
    if not isinstance(wrapper, OptimWrapper):
        raise TypeError(
            'Sharded checkpoints support one OptimWrapper, got '
            f'{type(wrapper).__name__}; use a single optimizer or '
            'default_hooks.checkpoint.sharded=False (without FSDP2).'
        )
    return wrapper


def _runner_state(
    runner,
    meta: Optional[dict],
    by_epoch: bool,
    save_optimizer: bool,
    save_param_scheduler: bool,
) -> dict:
    """What an ordinary checkpoint holds besides the model and optimizer
    (the fields of ``mmengine.runner.Runner.save_checkpoint``). Rank 0."""
    meta = dict(meta or {})
    meta.setdefault('epoch', runner.epoch + 1 if by_epoch else runner.epoch)
    meta.setdefault('iter', runner.iter if by_epoch else runner.iter + 1)
    meta.update(
        cfg=runner.cfg.pretty_text,
        seed=runner.seed,
        experiment_name=runner.experiment_name,
        time=time.strftime('%Y%m%d_%H%M%S', time.localtime()),
        mmengine_version=mmengine.__version__,
    )
    dataset = runner.train_dataloader.dataset
    if hasattr(dataset, 'metainfo'):
        meta.update(dataset_meta=dataset.metainfo)
    checkpoint: dict = dict(
        meta=meta,
        message_hub=apply_to(
            runner.message_hub.state_dict(),
            lambda x: hasattr(x, 'cpu'),
            lambda x: x.cpu(),
        ),
    )
    checkpoint[SHARDED_KEY] = dict(optimizer=save_optimizer)
    scaler = getattr(runner.optim_wrapper, 'loss_scaler', None)
    if save_optimizer and scaler is not None:
        checkpoint['loss_scaler'] = scaler.state_dict()
    schedulers = runner.param_schedulers
    if save_param_scheduler and schedulers is not None:
        if isinstance(schedulers, dict):
            checkpoint['param_schedulers'] = {
                name: [s.state_dict() for s in group]
                for name, group in schedulers.items()
            }
        else:
            checkpoint['param_schedulers'] = [
                s.state_dict() for s in schedulers
            ]
    runner.call_hook('before_save_checkpoint', checkpoint=checkpoint)
    return checkpoint


def save_sharded_checkpoint(
    runner,
    out_dir: str,
    filename: str,
    save_optimizer: bool = True,
    save_param_scheduler: bool = True,
    meta: Optional[dict] = None,
    by_epoch: bool = True,
    **unused: Any,
) -> str:
    """Save the run as the sharded folder ``out_dir/filename``.

    A collective: every rank calls it. Arguments as
    ``Runner.save_checkpoint``; the folder must be local.

    Returns:
        str: The folder.
    """
    from mmssl.checkpoint import save_sharded, training_state

    for key in ('file_client_args', 'backend_args'):
        if unused.get(key) is not None:
            raise ValueError(
                f'Sharded checkpoints are written to local folders; '
                f'{key}={unused[key]!r} is not supported. Remove it from '
                'default_hooks.checkpoint.'
            )
    wrapper = _optim_wrapper(runner)
    optimizer = wrapper.optimizer if save_optimizer else None
    state = training_state(_module(runner.model), optimizer)
    extra = None
    if is_main_process():
        extra = _runner_state(
            runner, meta, by_epoch, save_optimizer, save_param_scheduler
        )
    path = osp.join(out_dir, filename)
    save_sharded(state, path, extra)
    return path


def _load_schedulers(runner, saved) -> None:
    runner.param_schedulers = runner.build_param_scheduler(
        runner.param_schedulers
    )
    if isinstance(runner.param_schedulers, dict):
        for name, group in runner.param_schedulers.items():
            for scheduler, state in zip(group, saved[name]):
                scheduler.load_state_dict(state)
    else:
        for scheduler, state in zip(runner.param_schedulers, saved):
            scheduler.load_state_dict(state)


def _resume_seed(runner, seed: Optional[int]) -> None:
    current = runner._randomness_cfg.get('seed')
    if seed is None or seed == current:
        return
    if current is not None:
        runner.logger.warning(
            f'The checkpoint was trained with seed {seed}, the config '
            f'says {current}: continuing with {seed}.'
        )
    runner._randomness_cfg.update(seed=seed)
    runner.set_randomness(**runner._randomness_cfg)


def resume_sharded(
    runner,
    dirname: str,
    resume_optimizer: bool = True,
    resume_param_scheduler: bool = True,
) -> dict:
    """Resume the run from the sharded folder ``dirname``, on any number
    of ranks (a collective).

    Loads the model and optimizer shards (resharded to this world size),
    the epoch/iteration counters, the seed, the message hub, the loss
    scaler and the param schedulers, as ``Runner.resume`` does for files.

    Returns:
        dict: The runner state (for the loop state and rank buffers).
    """
    from mmssl.checkpoint import load_runner_state, load_sharded

    checkpoint = load_runner_state(dirname, trusted=runner._trust())
    runner.call_hook('after_load_checkpoint', checkpoint=checkpoint)
    saved_optimizer = checkpoint.get(SHARDED_KEY, {}).get('optimizer', False)
    optimizer = None
    if resume_optimizer and saved_optimizer:
        runner.optim_wrapper = runner.build_optim_wrapper(runner.optim_wrapper)
        optimizer = _optim_wrapper(runner).optimizer
    load_sharded(dirname, _module(runner.model), optimizer)
    if optimizer is not None and 'loss_scaler' in checkpoint:
        runner.optim_wrapper.loss_scaler.load_state_dict(
            checkpoint['loss_scaler']
        )

    meta = checkpoint['meta']
    runner.train_loop._epoch = meta['epoch']
    runner.train_loop._iter = meta['iter']
    _resume_seed(runner, meta.get('seed'))
    runner.message_hub.load_state_dict(checkpoint['message_hub'])
    saved = checkpoint.get('param_schedulers')
    if resume_param_scheduler and saved is not None:
        if runner.param_schedulers is None:
            runner.logger.warning(
                'The checkpoint has param scheduler states but the run has '
                'no param_scheduler: they are not resumed.'
            )
        else:
            _load_schedulers(runner, saved)
    runner._has_loaded = True
    runner.logger.info(
        f'resumed epoch: {runner.epoch}, iter: {runner.iter} from the '
        f'sharded checkpoint {dirname}'
    )
    return checkpoint


def load_sharded_weights(runner, dirname: str) -> dict:
    """``load_from`` a sharded folder: the model weights only.

    Returns:
        dict: The runner state (``meta`` ...).
    """
    from mmssl.checkpoint import load_runner_state, load_sharded

    checkpoint = load_runner_state(dirname, trusted=runner._trust())
    runner.call_hook('after_load_checkpoint', checkpoint=checkpoint)
    load_sharded(dirname, _module(runner.model))
    runner._has_loaded = True
    runner.logger.info(f'Load sharded checkpoint from {dirname}')
    return checkpoint
