"""tools/train.py after a SLURM requeue: resume by itself, same config only."""

import os.path as osp

import pytest

from tests.support.tools import load_tool

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
DEMO = osp.join(ROOT, 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py')
train_tool = load_tool('train.py')


def _args(data_root, work_dir, *extra):
    return [
        DEMO,
        '--work-dir',
        work_dir,
        '--cfg-options',
        f'train_dataloader.dataset.data_root={data_root}/train',
        'train_dataloader.dataset.indices=8',
        'train_dataloader.batch_size=4',
        'train_dataloader.num_workers=0',
        'train_dataloader.persistent_workers=False',
        'val_cfg=None',
        'val_dataloader=None',
        'val_evaluator=None',
        'train_cfg.max_epochs=1',
        'randomness.seed=0',
        *extra,
    ]


@pytest.mark.slow
def test_requeued_run_resumes_same_config_and_refuses_another(
    demo_data_root, tmp_path, monkeypatch, capsys
):
    for var in ('SLURM_RESTART_COUNT', 'SLURM_JOB_ID'):
        monkeypatch.delenv(var, raising=False)
    work_dir = str(tmp_path / 'run')
    train_tool.main(_args(demo_data_root, work_dir))
    ckpt = osp.join(work_dir, 'epoch_1.pth')
    assert osp.isfile(ckpt)
    capsys.readouterr()

    # Started again by SLURM after a requeue: no --resume needed.
    monkeypatch.setenv('SLURM_JOB_ID', '77')
    monkeypatch.setenv('SLURM_RESTART_COUNT', '1')
    train_tool.main(_args(demo_data_root, work_dir))
    out = capsys.readouterr().out
    assert f'SLURM requeue: resuming from {ckpt}' in out

    # A changed config is refused, naming the key and the way out.
    with pytest.raises(SystemExit) as exc:
        train_tool.main(
            _args(demo_data_root, work_dir, 'model.head.temperature=0.3')
        )
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert 'model.head.temperature: 0.2 -> 0.3' in err
    assert '--work-dir' in err and '--resume CHECKPOINT' in err
