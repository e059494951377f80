"""tools/eval.py, knn_eval.py and test.py refuse what they did not load;
the dense probes write their figures, JSON and picture."""

import multiprocessing
import os
import os.path as osp
import subprocess
import sys

import cv2
import numpy as np
import pytest
import torch

from mmssl.evaluation.dense_figure import GAP, HEADER_HEIGHT
from mmssl.evaluation.records import read_metrics
from mmssl.registry import MODELS
from mmssl.setup_env import register_all_modules
from tests.support.dense_fixtures import write_ade, write_depth_folder
from tests.support.tools import ROOT, load_tool

DEMO = osp.join(ROOT, 'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py')


@pytest.fixture(scope='module')
def other_arch(tmp_path_factory) -> str:
    """A DINOv2 training file whose ViT is wider than the demo's."""
    register_all_modules()
    arch = dict(
        embed_dims=32, num_layers=2, num_heads=2, feedforward_channels=64
    )
    vit = MODELS.build(
        dict(type='DINOVisionTransformer', arch=arch, img_size=32)
    )
    state = {f'teacher.backbone.{k}': v for k, v in vit.state_dict().items()}
    path = str(tmp_path_factory.mktemp('ckpt') / 'other.pth')
    torch.save(dict(state_dict=state, meta=dict(epoch=1)), path)
    return path


def test_knn_eval_cli_refuses_another_architecture(other_arch):
    """Issue 30: no kNN figure of a random network with exit 0."""
    proc = subprocess.run(
        [sys.executable, 'tools/misc/knn_eval.py', DEMO, '--checkpoint',
         other_arch],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS='1'),
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert 'Traceback' not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f'error: {other_arch} does not hold the backbone')
    assert '0/' in last and 'shape' in last
    assert 'top1' not in proc.stdout + proc.stderr


def _cli(tool, args, cwd):
    return subprocess.run(
        [sys.executable, osp.join(ROOT, 'tools', tool), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS='1'),
        timeout=300,
    )


@pytest.mark.slow
def test_cli_refuses_another_architecture_in_one_line(other_arch, tmp_path):
    """From the shell, eval.py (rank, before any feature) and test.py
    (before the test loop): exit 2, one error line, no traceback, no
    folder left behind."""
    folder = tmp_path / 'imgs'
    folder.mkdir()
    for i in range(3):
        cv2.imwrite(str(folder / f'{i}.png'), np.zeros((8, 8, 3), np.uint8))
    runs = {
        'eval.py': [DEMO, '--task', 'rank', '--data', str(folder),
                    '--checkpoint', other_arch, '--work-dir', 'w'],
        'test.py': [DEMO, other_arch, '--work-dir', 'w'],
    }  # fmt: skip
    for tool, args in runs.items():
        proc = _cli(tool, args, tmp_path)
        assert proc.returncode == 2, (tool, proc.stderr[-3000:])
        log = proc.stdout + proc.stderr
        assert 'Traceback' not in log
        errors = [x for x in log.splitlines() if x.startswith('error:')]
        assert errors == [proc.stderr.strip()], tool
        assert errors[0].startswith(
            f'error: {other_arch} does not hold the backbone of {DEMO}: 0/'
        )
        assert not (tmp_path / 'w').exists(), tool
        assert 'rank/rankme' not in log and 'metrics' not in log


def test_test_tool_refuses_another_architecture(other_arch, tmp_path, capsys):
    tool = load_tool('test.py')
    with pytest.raises(SystemExit) as exit_:
        tool.main([DEMO, other_arch, '--work-dir', str(tmp_path)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert 'does not hold the backbone of' in err
    assert 'metrics' not in capsys.readouterr().out


def _eval(argv):
    return load_tool('eval.py').main(argv)


def _error_line(capsys) -> str:
    """The one ``error:`` line a refused run printed (in-process, so the
    traceback check is the subprocess tests': here stderr may hold the
    logging errors of a logger left on an earlier test's closed stream).
    """
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.startswith('error:')]
    assert len(lines) == 1, err
    return lines[0]


def test_seg_task_writes_figures_and_headline(tmp_path, capsys):
    data = write_ade(tmp_path / 'ade')
    (tmp_path / 'ade' / 'classes.txt').write_text('left\nright\n')
    work = str(tmp_path / 'work')
    argv = [DEMO, '--task', 'seg', '--data', data, '--work-dir', work]
    argv += ['--crop', '16', '--probe-iters', '5', '--batch-size', '4']
    metrics = _eval(argv)
    out = capsys.readouterr().out
    assert 'RANDOM INIT' in out
    assert '2 classes' in out
    # the default sweep: three learning rates scored on held-out images
    swept = {0.001, 0.01, 0.1}
    assert metrics['seg/probe_lr'] in swept
    heldout = {k: v for k, v in metrics.items() if 'heldout' in k}
    assert set(heldout) == {f'seg/heldout/lr_{lr:g}' for lr in swept}
    chosen = f'seg/heldout/lr_{metrics["seg/probe_lr"]:g}'
    assert heldout[chosen] == max(heldout.values())
    assert f'lr {metrics["seg/probe_lr"]:g}: ' in out and '<- chosen' in out
    last = out.strip().splitlines()[-1]
    assert last.startswith(f'seg/mIoU: {metrics["seg/mIoU"]:.2f}  [')
    assert read_metrics(osp.join(work, 'eval_seg.json')) == pytest.approx(
        metrics
    )
    import cv2

    picture = cv2.imread(osp.join(work, 'eval_seg.png'))
    # a title band, then 3 val images, one row each
    assert picture.shape[0] == HEADER_HEIGHT + 3 * (128 + 2)
    assert picture.shape[1] == 3 * 128 + 2 * GAP  # image | truth | pred


def test_seg_task_refuses_checkpoint_and_writes_nothing(
    tmp_path, other_arch, capsys
):
    data = write_ade(tmp_path / 'ade', 2, 1)
    work = str(tmp_path / 'work')
    argv = [DEMO, '--task', 'seg', '--data', data, '--work-dir', work]
    with pytest.raises(SystemExit) as exit_:
        _eval(argv + ['--checkpoint', other_arch, '--num-classes', '2'])
    assert exit_.value.code == 2
    assert 'does not hold the backbone' in _error_line(capsys)
    assert not osp.exists(work)
    with pytest.raises(SystemExit) as exit_:
        _eval(argv + ['--num-classes', '1', '--crop', '16'])
    assert exit_.value.code == 2
    assert '--num-classes 2' in _error_line(capsys)


def test_depth_task_with_pixels_baseline(tmp_path, capsys):
    data = write_depth_folder(tmp_path / 'd')
    work = str(tmp_path / 'work')
    argv = [DEMO, '--task', 'depth', '--data', data, '--work-dir', work]
    argv += ['--crop', '16', '--probe-iters', '100', '--features', 'pixels']
    argv += ['--probe-lr', '0.05', '--n-bins', '32']
    metrics = _eval(argv)
    assert set(metrics) == {
        'depth/rmse', 'depth/abs_rel', 'depth/delta1', 'depth/probe_lr',
        'depth/floor_rmse', 'depth/floor_abs_rel', 'depth/floor_delta1',
        'depth/floor_depth',
    }  # fmt: skip
    assert metrics['depth/probe_lr'] == 0.05  # one lr: no sweep
    out = capsys.readouterr().out
    assert 'lr sweep' not in out
    assert 'raw pixels' in out
    assert out.strip().splitlines()[-1].startswith('depth/rmse: ')
    assert metrics['depth/rmse'] < 1.0
    assert osp.isfile(osp.join(work, 'eval_depth.png'))
    assert np.isfinite(metrics['depth/delta1'])


def test_linear_task_on_labelled_folders(tmp_path, capsys):
    import cv2

    rng = np.random.default_rng(0)
    for split, n in (('train', 3), ('val', 2)):
        for cls, colour in (('a', (0, 0, 200)), ('b', (200, 0, 0))):
            folder = tmp_path / 'data' / split / cls
            folder.mkdir(parents=True)
            for i in range(n):
                noise = rng.integers(0, 30, (32, 32, 3))
                cv2.imwrite(str(folder / f'{i}.png'), colour + noise)
    work = str(tmp_path / 'work')
    metrics = _eval(
        [DEMO, '--task', 'linear', '--data', str(tmp_path / 'data'),
         '--work-dir', work]
    )  # fmt: skip
    assert set(metrics) == {
        'knn/top1', 'knn/top5', 'linear/top1', 'linear/top5',
        'knn/floor_top1',
    }  # fmt: skip
    assert metrics['knn/floor_top1'] == 50.0  # 2 of 4 queries: class a
    out = capsys.readouterr().out
    assert 'RANDOM INIT' in out
    assert (
        out.strip()
        .splitlines()[-1]
        .startswith(f'linear/top1: {metrics["linear/top1"]:.2f}')
    )
    assert read_metrics(osp.join(work, 'eval_linear.json')) == pytest.approx(
        metrics
    )


FINETUNE = osp.join(
    ROOT, 'configs/benchmarks/finetune/finetune_vit-tiny-p4_1xb64-10e_demo.py'
)


def _labelled_folders(root, n_train=4, n_val=2):
    import cv2

    rng = np.random.default_rng(0)
    for split, n in (('train', n_train), ('val', n_val)):
        for cls, colour in (('a', (0, 0, 200)), ('b', (200, 0, 0))):
            folder = root / split / cls
            folder.mkdir(parents=True)
            for i in range(n):
                noise = rng.integers(0, 30, (32, 32, 3))
                cv2.imwrite(str(folder / f'{i}.png'), colour + noise)
    return str(root)


def test_finetune_task_trains_and_reports_top1(tmp_path, capsys):
    data = _labelled_folders(tmp_path / 'data')
    work = str(tmp_path / 'work')
    children = multiprocessing.active_children()
    metrics = _eval(
        [FINETUNE, '--task', 'finetune', '--data', data, '--work-dir', work,
         '--cfg-options', 'train_cfg.max_epochs=1',
         'train_dataloader.batch_size=4', 'val_dataloader.batch_size=4']
    )  # fmt: skip
    assert set(metrics) == {'finetune/top1', 'finetune/top5'}
    # the persistent workers of its train and val loaders (2 each) stopped
    assert multiprocessing.active_children() == children
    # 4 val images of 2 classes: top-1 is a multiple of 25 %, top-5 of a
    # 10-way head holds both classes' labels only if it ranks them there
    assert metrics['finetune/top1'] in (0.0, 25.0, 50.0, 75.0, 100.0)
    out = capsys.readouterr().out
    assert 'RANDOM INIT' in out
    assert (
        out.strip()
        .splitlines()[-1]
        .startswith(f'finetune/top1: {metrics["finetune/top1"]:.2f}')
    )
    assert osp.isfile(osp.join(work, 'epoch_1.pth'))
    assert read_metrics(osp.join(work, 'eval_finetune.json')) == pytest.approx(
        metrics
    )


def test_finetune_task_refuses_a_pretraining_config(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        _eval([DEMO, '--task', 'finetune', '--work-dir', str(tmp_path)])
    assert exit_.value.code == 2
    line = _error_line(capsys)
    assert line.startswith('error: --task finetune takes a fine-tune config')
    assert line.endswith("builds 'DINOv2'.")


def test_finetune_task_refuses_another_architecture(
    other_arch, tmp_path, capsys
):
    """The teacher backbone is found ('teacher.' prefix) but is not the
    config's: one line, no figure, no JSON."""
    data = _labelled_folders(tmp_path / 'data')
    work = tmp_path / 'work'
    with pytest.raises(SystemExit) as exit_:
        _eval(
            [FINETUNE, '--task', 'finetune', '--data', data,
             '--checkpoint', other_arch, '--work-dir', str(work),
             '--cfg-options', 'train_cfg.max_epochs=1',
             'train_dataloader.batch_size=4']
        )  # fmt: skip
    assert exit_.value.code == 2
    message = _error_line(capsys)
    assert message.startswith('error: PretrainedStrip: only 0/')
    assert "prefix ('teacher.')" in message
    assert not (work / 'eval_finetune.json').exists()


BEIT_DEMO = osp.join(ROOT, 'configs/beit/beit_vit-tiny-p4_1xb64-4e_demo.py')


@pytest.mark.slow
def test_knn_builds_no_target_network(tmp_path, capsys):
    """BEiT's DALL-E tokenizer only makes training targets: kNN never
    builds it, so a missing tokenizer file (offline) does not matter."""
    data = _labelled_folders(tmp_path / 'data')
    tokenizer = str(tmp_path / 'absent_dalle_encoder.pth')
    metrics = _eval(
        [BEIT_DEMO, '--task', 'knn', '--data', data,
         '--work-dir', str(tmp_path / 'work'), '--cfg-options',
         'model.target_generator.type=PretrainedDALLETarget',
         'model.target_generator.init_cfg.type=Pretrained',
         f'model.target_generator.init_cfg.checkpoint={tokenizer}']
    )  # fmt: skip
    assert 0 <= metrics['knn/top1'] <= 100
    out = capsys.readouterr().out
    assert 'target network PretrainedDALLETarget not built' in out
