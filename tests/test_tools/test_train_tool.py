"""tools/train.py and tools/test.py end to end on CPU (tiny runs)."""

import glob
import os
import os.path as osp
import re
import subprocess
import sys

import pytest
import torch

from tests.support.tools import load_tool

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
DEMO = osp.join(ROOT, 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py')
test_tool = load_tool('test.py')
train_tool = load_tool('train.py')


def _small(root, batch=4, indices=8):
    return [
        f'train_dataloader.dataset.data_root={root}/train',
        f'train_dataloader.dataset.indices={indices}',
        f'train_dataloader.batch_size={batch}',
        'train_dataloader.num_workers=0',
        'train_dataloader.persistent_workers=False',
        'val_cfg=None',
        'val_dataloader=None',
        'val_evaluator=None',
        'default_hooks.logger.interval=1',
        "param_scheduler=[dict(type='ConstantLR', factor=1.0, "
        'by_epoch=True, begin=0, end=1)]',
    ]


def test_script_runs_from_anywhere_and_rejects_unknown_keys(tmp_path):
    """Another cwd: the bad key is named with suggestions. PYTHONPATH is
    this checkout only, as an editable install of it would give."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run(
        [
            sys.executable,
            osp.join(ROOT, 'tools/train.py'),
            DEMO,
            '--cfg-options',
            'model.backbone.deph=34',
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    assert 'model.backbone.deph' in proc.stderr
    assert '`model.backbone.depth`' in proc.stderr
    assert not osp.exists(tmp_path / 'work_dirs')


def test_too_small_dataset_stops_before_training(
    demo_data_root, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        train_tool.main(
            [
                DEMO,
                '--resume',
                '--cfg-options',
                *_small(demo_data_root, batch=16, indices=10),
            ]
        )
    assert info.value.code == 1
    out, err = capsys.readouterr()
    wd = tmp_path / 'work_dirs' / 'simclr_resnet18-w16_1xb64-10e_demo'
    assert f'work dir {wd}' in out  # default work dir, printed
    assert 'starts from scratch' in out  # --resume with nothing to resume
    assert '10 samples over world size 1' in err
    assert 'batch_size=16' in err and '0 iterations' in err
    assert not glob.glob(str(wd / '*.pth'))


@pytest.mark.slow
def test_train_amp_autoscale_then_test(demo_data_root, tmp_path, capsys):
    wd = str(tmp_path / 'wd')
    common = [DEMO, '--work-dir', wd, '--cfg-options', *_small(demo_data_root)]
    try:
        train_tool.main(
            common[:3]
            + [
                '--amp',
                '--auto-scale-lr',
                'sqrt',
                '--seed',
                '3',
                '--deterministic',
            ]
            + common[3:]
            # mmengine names the logger after the config and the second: a
            # runner made in the same second as an earlier test's would
            # reuse that logger and write the log into the other work dir
            + ['train_cfg.max_epochs=1', 'experiment_name=amp_autoscale']
        )
        assert os.environ['CUBLAS_WORKSPACE_CONFIG'] == ':4096:8'
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.is_deterministic_algorithms_warn_only_enabled()
        assert torch.backends.cudnn.deterministic
    finally:
        torch.use_deterministic_algorithms(False)
        torch.backends.cudnn.deterministic = False
        os.environ.pop('CUBLAS_WORKSPACE_CONFIG', None)
    out = capsys.readouterr().out
    assert osp.isfile(osp.join(wd, 'epoch_1.pth'))
    logs = sorted(glob.glob(osp.join(wd, '*', '*.log')))
    text = open(logs[-1]).read()
    # batch 4 on 1 process vs base 64: sqrt(4 / 64) = 0.25
    assert 'rule=sqrt, real batch size 4' in text
    assert 'optim_wrapper.optimizer.lr 0.1 -> 0.025' in text
    assert 'CPUAmpOptimWrapper' in text
    assert 'CUBLAS_WORKSPACE_CONFIG=:4096:8' in text
    ckpt = torch.load(
        osp.join(wd, 'epoch_1.pth'), map_location='cpu', weights_only=False
    )
    assert ckpt['meta']['epoch'] == 1
    assert ckpt['meta']['seed'] == 3

    # tools/test.py runs the config's kNN test loop on the training
    # checkpoint itself (mmssl's safe loader accepts mmengine's types)
    json_out = str(tmp_path / 'metrics.json')
    metrics = test_tool.main(
        [
            DEMO,
            osp.join(wd, 'epoch_1.pth'),
            '--work-dir',
            wd,
            '--out',
            json_out,
            '--cfg-options',
            f'test_dataloader.dataset.bank.data_root={demo_data_root}',
            f'test_dataloader.dataset.query.data_root={demo_data_root}',
            'test_dataloader.dataset.bank.indices=100',
            'test_dataloader.dataset.query.indices=50',
            'test_dataloader.num_workers=0',
        ]
    )
    out = capsys.readouterr().out
    top1 = [k for k in metrics if 'top1' in k]
    assert top1 and 0 <= metrics[top1[0]] <= 100
    assert f'{top1[0]}:' in out
    assert osp.isfile(json_out)


@pytest.mark.slow
def test_resume_continues_from_newest_checkpoint(
    demo_data_root, tmp_path, capsys
):
    wd = str(tmp_path / 'wd')
    common = [DEMO, '--work-dir', wd, '--cfg-options', *_small(demo_data_root)]
    train_tool.main(common + ['train_cfg.max_epochs=1'])
    assert osp.isfile(osp.join(wd, 'epoch_1.pth'))
    capsys.readouterr()
    train_tool.main(
        common[:3] + ['--resume'] + common[3:] + ['train_cfg.max_epochs=2']
    )
    out = capsys.readouterr().out
    assert f'resuming from {osp.join(wd, "epoch_1.pth")}' in out
    ckpt = torch.load(
        osp.join(wd, 'epoch_2.pth'), map_location='cpu', weights_only=False
    )
    assert ckpt['meta']['epoch'] == 2 and ckpt['meta']['iter'] == 4


def test_launcher_without_its_variables_fails_clearly(monkeypatch, capsys):
    for key in ('RANK', 'WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT'):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(SystemExit) as info:
        train_tool.main([DEMO, '--launcher', 'pytorch'])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert 'torchrun' in err and 'tools/dist_train.sh' in err


def _run_train(args, cwd, timeout=480):
    return subprocess.run(
        [sys.executable, osp.join(ROOT, 'tools/train.py'), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow
def test_first_iteration_within_40_console_lines(demo_data_root, tmp_path):
    """Environment, config and hooks go to the log file, not stdout; the
    default logger interval (10) is clamped to the 2-iteration epoch."""
    wd = tmp_path / 'wd'
    proc = _run_train(
        [DEMO, '--work-dir', str(wd), '--cfg-options']
        + _small(demo_data_root, indices=8)
        + ['default_hooks.logger.interval=10', 'train_cfg.max_epochs=1'],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if 'Epoch(train)' in line)
    assert first <= 40, '\n'.join(lines[:first])
    assert 'logging every 2 iterations' in proc.stdout
    assert 'base_lr: 1.0000e-01' in lines[first]
    assert 'Config:' not in proc.stdout
    assert 'Hooks will be executed' not in proc.stdout
    log = open(glob.glob(str(wd / '*' / '*.log'))[0]).read()
    assert 'Config:' in log and 'Hooks will be executed' in log


@pytest.mark.slow
def test_dry_run_reports_sizes_schedule_and_config_lr_rule(
    demo_data_root, tmp_path
):
    """Bare --auto-scale-lr takes the DINOv2 config's sqrt rule: batch 16 of
    64 gives factor sqrt(16 / 64) = 0.5 (linear would give 0.25)."""
    config = osp.join(
        ROOT, 'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py'
    )
    wd = tmp_path / 'wd'
    proc = _run_train(
        [config, '--work-dir', str(wd), '--auto-scale-lr', '--dry-run']
        + ['--cfg-options']
        + _small(demo_data_root, batch=16, indices=32)[:5],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert 'rule=sqrt, real batch size 16' in out and 'factor 0.5;' in out
    assert "rule from the config's auto_scale_lr.rule" in out
    assert 'lr: optimizer.lr 0.0005 (the base lr' in out
    assert 'dataset: 32 samples, batch size 16 x 1 process(es)' in out
    assert 'iterations per epoch: 2\n' in out
    assert 'schedule: 10 epochs, 20 iterations' in out
    # warm-up 1 epoch, cosine to the end, weight decay over the whole run
    assert 'LinearLR(lr): iterations 0 -> 2\n' in out
    assert 'CosineAnnealingLR(lr): iterations 2 -> 20\n' in out
    assert (
        'CosineAnnealingParamScheduler(weight_decay): iterations 0 -> 20'
        in out
    )
    assert re.search(r'model: DINOv2, \d+ parameters', out)
    assert not glob.glob(str(wd / '*.pth'))


def test_vis_without_its_package_names_the_install(monkeypatch, capsys):
    import importlib

    # the module, not mmssl.apis.train the function
    train_api = importlib.import_module('mmssl.apis.train')
    missing = ('TensorboardVisBackend', 'no_such_tensorboard')
    monkeypatch.setitem(train_api.VIS_BACKENDS, 'tensorboard', missing)
    with pytest.raises(SystemExit) as info:
        train_tool.main([DEMO, '--vis', 'tensorboard'])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert 'pip install no_such_tensorboard' in err and '[optional]' in err


@pytest.mark.slow
def test_mmpretrain_inherited_config_trains_resized(
    demo_data_root, tmp_path, monkeypatch
):
    """A config built on an ``mmpretrain::`` base (its dicts carry
    ``_scope_='mmpretrain'``) for ViT-B with AMP (AmpOptimWrapper asserts a
    GPU) and persistent workers (torch refuses them with num_workers=0)
    trains one iteration on the CPU with ``arch=deit-tiny`` as its only
    model change, on a plain folder (configs/custom/image_folder.py with
    the recipe named by RECIPE), and logs RankMe before and after it (the
    hook image_folder.py adds, on 8 of the images)."""
    monkeypatch.setenv(
        'RECIPE',
        osp.join(
            ROOT,
            'configs/mocov3/mocov3_vit-base-p16_16xb256-amp-coslr-300e_in1k.py',
        ),
    )
    config = osp.join(ROOT, 'configs/custom/image_folder.py')
    wd = tmp_path / 'wd'
    proc = _run_train(
        [config, '--work-dir', str(wd), '--max-iters', '1', '--cfg-options']
        + [
            'model.backbone.arch=deit-tiny',
            f'train_dataloader.dataset.data_root={demo_data_root}/train',
            'train_dataloader.batch_size=4',
            'train_dataloader.num_workers=0',
            'custom_hooks.-1.max_images=8',
        ],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert 'loss: ' in proc.stdout and 'Saving checkpoint' in proc.stdout
    ranks = re.findall(
        r'RankMe [\d.]+ .*of at most 8, .*, 8 images', proc.stdout
    )
    assert len(ranks) == 2, proc.stdout[-3000:]  # random init, iteration 1
    state = torch.load(glob.glob(str(wd / '*.pth'))[0], weights_only=False)
    # ViT-tiny (192) -> the projector's first layer, set to 'auto'
    assert state['state_dict']['neck.fc0.weight'].shape[1] == 192
    if not torch.cuda.is_available():
        assert (
            'optim_wrapper: AmpOptimWrapper needs a GPU and CUDA is not '
            'available; using CPUAmpOptimWrapper (bfloat16 autocast) instead.'
        ) in proc.stdout
    # the checkpoint keeps the config as written, for a resume on a GPU
    assert "type='AmpOptimWrapper'" in state['meta']['cfg']
