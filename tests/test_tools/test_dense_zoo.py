""".dev_scripts/dense_zoo.py: a dense demo's row, trained vs
random init, with its commands and a JSON file."""

import json
import os.path as osp

import pytest

from mmssl_dev.dense_zoo import (
    commands,
    data_fingerprint,
    last_epoch_checkpoint,
)
from tests.support.tools import ROOT, load_dev_script, load_tool

MAE = 'configs/mae/mae_vit-tiny-p8_1xb64-40e_dense_demo.py'


def test_last_epoch_checkpoint_is_the_highest_epoch_not_the_last_name(
    tmp_path,
):
    for n in (2, 9, 10):
        (tmp_path / f'epoch_{n}.pth').write_bytes(b'')
    assert last_epoch_checkpoint(str(tmp_path)).endswith('epoch_10.pth')
    with pytest.raises(FileNotFoundError, match='no epoch_'):
        last_epoch_checkpoint(str(tmp_path / 'empty'))


def test_commands_point_training_at_another_dense_set_only_when_asked():
    default = commands(MAE, 'data/dense', 'w')
    assert '--cfg-options' not in default['train']
    other = commands(MAE, '/tmp/d', 'w', ['train_cfg.max_epochs=1'])
    assert other['train'][-2:] == [
        'train_cfg.max_epochs=1',
        'train_dataloader.dataset.data_root=/tmp/d/images/training',
    ]
    for key in ('probe_random', 'probe_trained'):
        argv = other[key]
        assert argv[:6] == [
            'tools/eval.py',
            MAE,
            '--task',
            'seg',
            '--data',
            '/tmp/d',
        ]
        assert argv[argv.index('--crop') + 1] == '64'
        assert argv[-1] == osp.join('w', key.split('_')[1])


@pytest.mark.slow
def test_one_epoch_row_and_json(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    data = str(tmp_path / 'dense')
    load_tool('misc/make_dense_dataset.py').write(data, 16, 8)
    results = str(tmp_path / 'rows.json')
    tool = load_dev_script('dense_zoo.py')
    tool.main(
        [MAE, '--data', data, '--work-dir', str(tmp_path / 'w')]
        + ['--results', results, '--train-options', 'train_cfg.max_epochs=1']
        + ['train_dataloader.batch_size=8']
        + ['--probe-options', '--probe-iters 5 --batch-size 4']
    )
    (row,) = json.load(open(results))
    assert row['config'] == MAE and row['algorithm'] == 'mae'
    for key in ('random', 'trained'):
        assert 0 <= row[key]['seg/mIoU'] <= 100
        assert len(row[key]['per_class_iou']) == 6  # background + 5 shapes
    assert min(row['train_s'], row['probe_random_s']) > 0
    ckpt = osp.join(str(tmp_path / 'w'), osp.basename(MAE)[:-3], 'train')
    assert row['commands']['probe_trained'].endswith(
        f'--checkpoint {osp.join(ckpt, "epoch_1.pth")}'
    )
    assert row['data_fingerprint'] == data_fingerprint(data)
    out = capsys.readouterr().out
    assert 'probe at random init ...' in out and 'pretraining ...' in out
    table_row = [line for line in out.splitlines() if line.startswith('| mae')]
    assert table_row[-1].split(' | ')[2:4] == [
        f'{row["trained"]["seg/mIoU"]:.2f}',
        f'{row["random"]["seg/mIoU"]:.2f}',
    ]


def test_a_failing_config_is_reported_and_the_tool_exits_non_zero(
    tmp_path, capsys
):
    tool = load_dev_script('dense_zoo.py')
    with pytest.raises(SystemExit, match='failed: configs/no_such.py'):
        tool.main(
            ['configs/no_such.py', '--data', str(tmp_path)]
            + ['--work-dir', str(tmp_path / 'w')]
        )
    assert 'FAILED' in capsys.readouterr().out
