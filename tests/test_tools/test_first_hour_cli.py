"""The first hour with tools/train.py and tools/test.py, from the shell:
one-line user errors, a quiet console, a log line without waiting for
the logger interval, a closing summary, --dry-run's memory estimate."""

import os
import os.path as osp
import re
import subprocess
import sys

import pytest
import torch

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
TINY = osp.join(ROOT, 'tests', 'data', 'configs', 'simclr_tiny_iters.py')
DEMO = 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py'

#: Lines that must not come back (issue 30, item 7).
NOISE = (
    '"FileClient" will be deprecated',
    'HardDiskBackend',
    'Exp name:',
    'worker processes in total',
    'no accelerator is found',  # torch's pin_memory warning
    'MKL_NUM_THREADS',
    'never undo',
    'Distributed training is not used',
    'Traceback',
)


def _run(args, cwd, tool='train.py', timeout=300):
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([ROOT, osp.join(ROOT, 'tests', 'data')]),
        OMP_NUM_THREADS='1',
    )
    proc = subprocess.run(
        [sys.executable, osp.join(ROOT, 'tools', tool), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return proc.returncode, proc.stdout, proc.stderr


def _tiny(root, *extra):
    return [
        TINY,
        '--cfg-options',
        f'train_dataloader.dataset.data_root={root}',
        *extra,
    ]


def _one_error_line(err):
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith('error: '), err
    return lines[0]


def test_misspelt_config_names_the_nearest(tmp_path):
    code, _, err = _run([DEMO.replace('_demo', '_dem')], cwd=tmp_path)
    line = _one_error_line(err)
    assert code == 2
    assert f'did you mean {DEMO}' in line
    code, _, err = _run(
        [DEMO.replace('_demo', '_dem'), 'ckpt.pth'], tmp_path, 'test.py'
    )
    assert code == 2 and f'did you mean {DEMO}' in _one_error_line(err)


def test_empty_data_root_is_one_line_and_leaves_no_work_dir(tmp_path):
    (tmp_path / 'empty').mkdir()
    wd = tmp_path / 'wd'
    code, out, err = _run(
        ['--work-dir', str(wd), *_tiny(tmp_path / 'empty')], cwd=tmp_path
    )
    line = _one_error_line(err)
    assert code == 2 and 'No images' in line and 'data_root' in line
    assert not wd.exists()  # no empty timestamped folder, no config copy


@pytest.mark.slow
def test_debug_shows_the_traceback(tmp_path):
    code, _, err = _run(
        ['--debug', *_tiny(tmp_path / 'missing')], cwd=tmp_path
    )
    assert code == 1 and 'Traceback' in err
    assert 'is not a folder' in err.splitlines()[-1]


def test_truncated_resume_names_the_newest_complete_checkpoint(tmp_path):
    wd = tmp_path / 'wd'
    wd.mkdir()
    torch.save({'meta': {}, 'state_dict': {}}, wd / 'iter_10.pth')
    torch.save({'meta': {}, 'state_dict': {'w': torch.zeros(99)}}, wd / 'x')
    data = (wd / 'x').read_bytes()
    (wd / 'iter_20.pth').write_bytes(data[: len(data) // 2])
    os.utime(wd / 'iter_10.pth', (1, 1))  # older than the torn one
    code, _, err = _run(
        ['--work-dir', str(wd), '--resume', str(wd / 'iter_20.pth')]
        + _tiny(tmp_path),
        cwd=tmp_path,
    )
    line = _one_error_line(err)
    assert code == 2 and 'iter_20.pth' in line
    assert f'--resume {wd / "iter_10.pth"}' in line
    assert '--resume without a value' in line


def test_missing_test_data_is_one_line_and_leaves_no_work_dir(tmp_path):
    """tools/test.py with a checkpoint of the config's model but no test
    folder (data/demo not made in this cwd): one line naming the folder and
    the command that makes it, exit 2, no timestamped folders."""
    from mmssl.config import load_config
    from mmssl.registry import MODELS
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    model = MODELS.build(load_config(osp.join(ROOT, DEMO)).model)
    ckpt = tmp_path / 'demo.pth'
    torch.save({'meta': {}, 'state_dict': model.state_dict()}, ckpt)
    wd = tmp_path / 'wd'
    code, _, err = _run(
        [osp.join(ROOT, DEMO), str(ckpt), '--work-dir', str(wd)],
        tmp_path,
        'test.py',
    )
    line = _one_error_line(err)
    assert code == 2
    assert 'test data' in line and 'data/demo/train' in line
    assert 'make_demo_dataset.py data/demo' in line
    assert not wd.exists()


@pytest.mark.slow
def test_checkpoint_of_another_model_is_refused(tmp_path, demo_data_root):
    ckpt = tmp_path / 'other.pth'
    torch.save({'meta': {}, 'state_dict': {'fc.weight': torch.ones(3)}}, ckpt)
    code, _, err = _run(
        ['--resume', str(ckpt), '--work-dir', str(tmp_path / 'wd')]
        + _tiny(f'{demo_data_root}/train'),
        cwd=tmp_path,
    )
    line = _one_error_line(err)
    assert code == 2 and 'a checkpoint of another model' in line
    assert re.search(r'\(0 of \d+ parameters', line)


def test_quiet_run_logs_by_time_and_closes_with_a_summary(
    tmp_path, demo_data_root
):
    wd = tmp_path / 'wd'
    code, out, err = _run(
        ['--work-dir', str(wd), '--max-iters', '3', '--allow-new-keys']
        + _tiny(
            f'{demo_data_root}/train',
            # what made the noise: more workers than cores, pinning
            # without a GPU, a one-step warm-up; a logger interval of
            # 1000 and a 0-second time-based log line
            'train_dataloader.num_workers=8',
            'train_dataloader.persistent_workers=True',
            'train_dataloader.pin_memory=True',
            "param_scheduler=[dict(type='LinearLR', start_factor=0.1, "
            'by_epoch=False, begin=0, end=1)]',
            'default_hooks.logger.interval=1000',
            "custom_hooks=[dict(type='TimeLogHook', seconds=0, "
            'first_after=0)]',
        ),
        cwd=tmp_path,
    )
    text = out + err
    assert code == 0, text
    for noise in NOISE:
        assert noise not in text, noise
    assert text.count('keep its start factor for the whole run') == 1
    assert 'num_workers 8 -> ' in text
    # LoggerHook logs at 3 only (interval clamped to the run): 1 and 2
    # come from TimeLogHook
    assert re.findall(r'Iter\(train\) \[(\d)/3\]', text) == ['1', '2', '3']
    assert f'work dir {wd}' in text
    assert 'trained on ' + f'{demo_data_root}/train' in text
    assert f'last checkpoint: {wd}/iter_3.pth' in text
    assert 'no validation metric' in text
    # the next command, with this run's config and checkpoint
    assert f'--checkpoint {wd}/iter_3.pth --task rank' in text


def test_launch_ports_module_runs_without_a_warning():
    proc = subprocess.run(
        [sys.executable, '-m', 'mmssl.launch.ports'],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=ROOT),
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stderr == ''
    assert proc.stdout.strip().isdigit()


@pytest.mark.slow
def test_dry_run_measures_step_memory_and_leaves_nothing(
    tmp_path, demo_data_root
):
    wd = tmp_path / 'wd'
    code, out, err = _run(
        ['--dry-run', '--work-dir', str(wd)]
        + _tiny(f'{demo_data_root}/train', 'train_dataloader.batch_size=8'),
        cwd=tmp_path,
    )
    assert code == 0, err
    found = re.search(
        r'peak memory of one training step at batch 8: about ([\d.]+) GiB '
        r'\(measured ([\d.]+) GiB at batch 2, ([\d.]+) GiB at batch 4, '
        'extended to batch 8',
        out,
    )
    assert found, out
    at8, at2, at4 = (float(found.group(i)) for i in (1, 2, 3))
    assert 0.1 < at2 <= at4 <= at8 < 8
    # the printed figures are rounded to 0.01 GiB
    assert at8 == pytest.approx(at4 + 2 * (at4 - at2), abs=0.04)
    assert not wd.exists()
