from types import SimpleNamespace

import pytest
from mmpretrain.structures import DataSample

from mmssl.engine.hooks import BadFileSummaryHook


class _Logger:
    def __init__(self):
        self.lines = []

    def warning(self, msg):
        self.lines.append(msg)


def _batch(n, skipped=()):
    samples = [DataSample() for _ in range(n)]
    samples[0].set_metainfo(dict(skipped_files=list(skipped)))
    return dict(data_samples=samples)


def test_counts_distinct_files_and_logs_once():
    runner = SimpleNamespace(logger=_Logger(), iter=0)
    hook = BadFileSummaryHook(interval=1000, max_bad_ratio=0.5)
    for i in range(3):
        hook.after_train_iter(
            runner, i, _batch(4, [('/d/a.jpg', 'zero-byte file')])
        )
    hook.after_train_epoch(runner)
    assert hook.counter.bad == {'/d/a.jpg': 'zero-byte file'}
    assert hook.counter.samples == 12
    named = [line for line in runner.logger.lines if 'a.jpg' in line]
    assert len(named) == 1 and 'zero-byte' in named[0]
    assert '1 bad image file(s)' in runner.logger.lines[-1]


def test_raises_above_ratio():
    runner = SimpleNamespace(logger=_Logger(), iter=0)
    hook = BadFileSummaryHook(interval=1000, max_bad_ratio=0.01)
    skipped = [(f'/d/{i}.jpg', 'truncated') for i in range(5)]
    hook.after_train_iter(runner, 0, _batch(100, skipped))
    with pytest.raises(RuntimeError, match='max_bad_ratio=0.01'):
        hook.after_train_epoch(runner)
