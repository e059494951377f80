"""Two runs started by one process in the same second keep their own logs.

mmengine names a run after the second it started and hands back an
existing logger / visualizer for a name it has seen, so the second run
logged into the first run's files.
"""

import glob
import os.path as osp
import types

from mmengine.logging import MMLogger

from mmssl.engine.runner import build_runner
from mmssl.engine.runner.runner import unique_timestamp
from tests.support.resume import tiny_cfg

DEMO = 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py'


def test_unique_timestamp():
    stamp = '20000101_000001'
    assert unique_timestamp(stamp) == stamp
    MMLogger.get_instance(f'my_config_{stamp}')
    assert unique_timestamp(stamp) == f'{stamp}_1'
    MMLogger.get_instance(f'other_{stamp}_1')
    assert unique_timestamp(stamp) == f'{stamp}_2'
    assert unique_timestamp('20000101_000002') == '20000101_000002'


def test_two_runs_in_one_second_log_apart(
    demo_data_root, tmp_path, monkeypatch
):
    import time

    import mmengine.runner.runner as mm_runner

    frozen = types.SimpleNamespace(**vars(time))
    frozen.time = lambda: 946684800.0  # both runs start in one second
    monkeypatch.setattr(mm_runner, 'time', frozen)
    runners = []
    for name in ('a', 'b'):
        cfg = tiny_cfg(DEMO, demo_data_root, str(tmp_path / name))
        runners.append(build_runner(cfg))
    first, second = runners
    assert first.experiment_name != second.experiment_name
    assert first.logger is not second.logger
    second.logger.info('from the second run')
    for runner, name in zip(runners, 'ab'):
        (log,) = glob.glob(str(tmp_path / name / '*' / '*.log'))
        with open(log) as f:
            text = f.read()
        assert ('from the second run' in text) == (name == 'b')
    assert osp.basename(osp.dirname(log)).endswith('_1')
