"""The schedule lines of --dry-run: begin and end in iterations."""

from types import SimpleNamespace

from mmengine.optim.scheduler.param_scheduler import INF

from mmssl.engine.preflight.dry_run import _scheduler_lines


def _sched(begin, end, by_epoch, name='lr'):
    return SimpleNamespace(
        begin=begin, end=end, by_epoch=by_epoch, param_name=name
    )


def test_epoch_based_schedulers_are_given_in_iterations():
    lines = _scheduler_lines(
        [_sched(1, 3, True), _sched(0, 40, False, 'momentum')],
        iters_per_epoch=5,
        max_iters=20,
    )
    assert lines == [
        'param schedulers (of 20 iterations):',
        '  SimpleNamespace(lr): iterations 5 -> 15',
        '  SimpleNamespace(momentum): iterations 0 -> 20',  # capped at end
    ]


def test_open_end_and_per_optimizer_schedulers():
    lines = _scheduler_lines({'student': [_sched(0, INF, False)]}, 4, 8)
    assert lines[1] == '  student.SimpleNamespace(lr): iterations 0 -> 8'
    assert _scheduler_lines(None, 4, 8) == [
        'param schedulers: none (constant values)'
    ]
