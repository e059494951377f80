"""``tools/train.py --dry-run``: build everything, report, do not train
(a few measuring steps on tiny batches aside)."""

from typing import Any, Dict, List

from mmengine.hooks import LoggerHook
from mmengine.runner import EpochBasedTrainLoop

from mmssl.engine.hooks.log_interval_hook import clamp_logger_interval

from .step_memory import measure_step_memory, step_memory_lines


def _fmt_count(n: int) -> str:
    for unit, size in (('G', 1e9), ('M', 1e6), ('K', 1e3)):
        if n >= size:
            return f'{n / size:.2f}{unit}'
    return str(n)


def _optimizers(optim_wrapper: Any) -> Dict[str, Any]:
    """``{name: torch optimizer}`` of an optim wrapper or wrapper dict."""
    if hasattr(optim_wrapper, 'optimizer'):
        return {'optimizer': optim_wrapper.optimizer}
    return {
        f'{name}.optimizer': wrapper.optimizer
        for name, wrapper in optim_wrapper.items()
    }


def _scheduler_lines(schedulers: Any, iters_per_epoch: int, max_iters: int):
    if schedulers is None:
        return ['param schedulers: none (constant values)']
    if isinstance(schedulers, dict):  # one list per optimizer
        items = [
            (f'{name}.', s)
            for name, group in schedulers.items()
            for s in group
        ]
    else:
        items = [('', s) for s in schedulers]
    lines = []
    for prefix, sched in items:
        scale = iters_per_epoch if sched.by_epoch else 1
        begin = sched.begin * scale
        # an open end (mmengine's INF) is the end of the run
        end = min(sched.end * scale, max_iters)
        lines.append(
            f'  {prefix}{type(sched).__name__}({sched.param_name}): '
            f'iterations {begin} -> {end}'
        )
    return [f'param schedulers (of {max_iters} iterations):', *lines]


def dry_run(runner: Any, measure_memory: bool = True) -> List[str]:
    """Build optimizer and schedulers as ``runner.train()`` would; report.

    No checkpoint is written. The train loop must be built
    (:func:`.build.build_train_runner` does it). With
    ``measure_memory``, a few training steps on batches of 2 and 4
    samples measure the peak memory of one step at the configured batch
    (:mod:`.step_memory`), with a warning when it exceeds the memory
    available; they change the weights of ``runner.model``.

    Args:
        runner (Runner): A runner whose train loop is built.
        measure_memory (bool): Measure the peak memory of a step.

    Returns:
        list[str]: Lines for the console: model size, dataset size,
        iterations per epoch, the begin and end of every scheduler in
        iterations, the effective learning rates and the peak memory.
    """
    loop = runner.train_loop
    dataloader = runner.train_dataloader
    iters_per_epoch = len(dataloader)
    runner.optim_wrapper = runner.build_optim_wrapper(runner.optim_wrapper)
    runner.scale_lr(runner.optim_wrapper, runner.auto_scale_lr)
    if runner.param_schedulers is not None:
        runner.param_schedulers = runner.build_param_scheduler(
            runner.param_schedulers
        )
    # as mmssl.apis.count_params (parameters() counts a shared one once)
    params = list(runner.model.parameters())
    total = sum(p.numel() for p in params)
    trainable = sum(p.numel() for p in params if p.requires_grad)
    batch = dataloader.batch_size
    lines = [
        'dry run: everything is built; nothing is trained.',
        f'model: {type(runner.model).__name__}, {total} parameters '
        f'({_fmt_count(total)}), {trainable} trainable',
        f'dataset: {len(dataloader.dataset)} samples, batch size {batch} '
        f'x {runner.world_size} process(es)',
        f'iterations per epoch: {iters_per_epoch}',
        f'schedule: {loop.max_epochs} epochs, {loop.max_iters} iterations'
        if isinstance(loop, EpochBasedTrainLoop)
        else f'schedule: {loop.max_iters} iterations (iteration-based)',
    ]
    note = clamp_logger_interval(runner)
    for hook in runner.hooks:
        if isinstance(hook, LoggerHook):
            lines.append(note or f'logger: every {hook.interval} iterations')
    lines += _scheduler_lines(
        runner.param_schedulers, iters_per_epoch, loop.max_iters
    )
    for name, optimizer in _optimizers(runner.optim_wrapper).items():
        groups = [g.get('initial_lr', g['lr']) for g in optimizer.param_groups]
        lines.append(
            f'lr: {name}.lr {optimizer.defaults["lr"]:.6g} (the base lr, '
            f'after any --auto-scale-lr); {len(groups)} param group(s) '
            f'from {min(groups):.6g} to {max(groups):.6g}'
        )
    if measure_memory:
        try:
            lines += step_memory_lines(measure_step_memory(runner))
        except Exception as exc:  # report, do not hide the other lines
            lines.append(
                'peak memory of a training step: could not run one '
                f'({type(exc).__name__}: {exc})'
            )
    return lines
