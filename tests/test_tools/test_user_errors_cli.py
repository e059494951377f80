"""One line for a user error, value typos included: the bad value, the
nearest valid ones, exit 2, no traceback, no folders left behind."""

import os
import os.path as osp
import subprocess
import sys

import pytest
import torch

from mmssl.errors import config_build_error, find_config_value
from tests.support.dense_fixtures import write_ade
from tests.support.tools import ROOT, load_tool

DEMO = osp.join(ROOT, 'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py')
CPU = osp.join(
    ROOT, 'configs/dinov2/dinov2_vit-tiny-p14_1xb16-10e_custom-cpu.py'
)
TYPO = ['--cfg-options', 'model.backbone.arch=tiyn']
SAID = "error: model.backbone.arch='tiyn': Unknown arch 'tiyn'; choose from "
FIX = "did you mean 'tiny'? (--cfg-options model.backbone.arch=tiny)"


def _one_error_line(err):
    lines = [x for x in err.splitlines() if x.strip()]
    assert 'Traceback' not in err
    assert len([x for x in lines if x.startswith('error:')]) == 1
    return next(x for x in lines if x.startswith('error:'))


def _the_error_line(err):
    """The one ``error:`` line of an in-process run (its stderr may hold
    a logging error of a logger left on an earlier test's closed stream:
    the subprocess tests check for tracebacks)."""
    lines = [x for x in err.splitlines() if x.startswith('error:')]
    assert len(lines) == 1, err
    return lines[0]


def test_build_error_names_key_value_and_nearest():
    cfg = dict(model=dict(backbone=dict(type='ViT', arch='smal')))
    try:
        try:
            raise AssertionError("Arch smal is not in default archs {'small'}")
        except AssertionError as inner:
            raise AssertionError(f'class `ViT` in mod.x: {inner}') from inner
    except AssertionError as exc:
        error = config_build_error(exc, cfg)
    assert str(error) == (
        "model.backbone.arch='smal': Arch smal is not in default archs "
        "{'small'}; did you mean 'small'? (--cfg-options "
        'model.backbone.arch=small)'
    )
    assert error.exit_code == 2
    assert find_config_value(cfg, 'nothing of it here') is None


def test_train_value_typo_is_one_line(tmp_path, capsys):
    work = tmp_path / 'work'
    with pytest.raises(SystemExit) as exit_:
        load_tool('train.py').main([DEMO, '--work-dir', str(work)] + TYPO)
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    line = _one_error_line(err)
    assert line.startswith(SAID) and line.endswith(FIX)
    assert not work.exists()  # the failed start left no folder
    assert '.log only' not in out + err  # names no removed log file


def test_train_value_typo_with_debug_shows_the_traceback(tmp_path):
    with pytest.raises(Exception, match="Unknown arch 'tiyn'"):
        load_tool('train.py').main(
            [DEMO, '--work-dir', str(tmp_path / 'w'), '--debug'] + TYPO
        )


def test_eval_seg_value_typo_is_one_line(tmp_path, capsys):
    data = write_ade(tmp_path / 'ade', 2, 1)
    work = tmp_path / 'work'
    argv = [DEMO, '--task', 'seg', '--data', data, '--work-dir', str(work)]
    with pytest.raises(SystemExit) as exit_:
        load_tool('eval.py').main(argv + ['--num-classes', '2'] + TYPO)
    assert exit_.value.code == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith(SAID) and line.endswith(FIX)
    assert not work.exists()


def test_eval_knn_names_flags_eval_has(tmp_path, capsys):
    tool = load_tool('eval.py')
    with pytest.raises(SystemExit) as exit_:
        tool.main([CPU, '--task', 'knn', '--work-dir', str(tmp_path / 'w')])
    assert exit_.value.code == 2
    message = _the_error_line(capsys.readouterr().err)
    assert '--data ROOT' in message and '--train-folder' not in message
    with pytest.raises(SystemExit) as exit_:
        tool.main([DEMO, '--task', 'knn', '--data', str(tmp_path / 'no'),
                   '--work-dir', str(tmp_path / 'w')])  # fmt: skip
    assert exit_.value.code == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith(f'error: {tmp_path / "no" / "train"} is not')
    assert 'ROOT/train/<class>/<image>' in line
    assert not (tmp_path / 'w').exists()


def test_rank_refuses_a_checkpoint_before_computing(
    tmp_path, monkeypatch, capsys
):
    """The mismatch is found before any feature is computed (it took
    45 s of random-init features before)."""
    import mmssl.evaluation.tasks.rank_eval as rank_eval

    def no_features(*args, **kwargs):
        raise AssertionError('features computed before the check')

    monkeypatch.setattr(rank_eval, '_features', no_features)
    ckpt = str(tmp_path / 'other.pth')
    torch.save(dict(state_dict={'teacher.backbone.x': torch.ones(3)}), ckpt)
    folder = tmp_path / 'imgs'
    folder.mkdir()
    import cv2
    import numpy as np

    for i in range(3):
        cv2.imwrite(str(folder / f'{i}.png'), np.zeros((8, 8, 3), np.uint8))
    with pytest.raises(SystemExit) as exit_:
        load_tool('eval.py').main(
            [DEMO, '--task', 'rank', '--data', str(folder), '--checkpoint',
             ckpt, '--work-dir', str(tmp_path / 'w')]
        )  # fmt: skip
    assert exit_.value.code == 2
    line = _the_error_line(capsys.readouterr().err)
    assert f'error: {ckpt} does not hold the backbone' in line
    assert not (tmp_path / 'w').exists()


def test_test_tool_value_typo_is_one_line(tmp_path, capsys):
    ckpt = tmp_path / 'w.pth'
    torch.save(dict(state_dict={}), ckpt)
    work = tmp_path / 'work'
    with pytest.raises(SystemExit) as exit_:
        load_tool('test.py').run(
            [DEMO, str(ckpt), '--work-dir', str(work)] + TYPO
        )
    assert exit_.value.code == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith(SAID) and line.endswith(FIX)
    assert not work.exists()


def _cli(tool, args, cwd):
    return subprocess.run(
        [sys.executable, osp.join(ROOT, 'tools', tool), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS='1'),
        timeout=300,
    )


def test_test_tool_without_a_test_loop_names_the_fix(tmp_path):
    """From the shell: exit 2, one line naming the missing key and the
    way out, no traceback, no folder."""
    ckpt = tmp_path / 'w.pth'
    torch.save(dict(state_dict={}), ckpt)
    config = osp.join(ROOT, 'tests', 'data', 'configs', 'mae_tiny.py')
    proc = _cli('test.py', [config, str(ckpt), '--work-dir', 'w'], tmp_path)
    assert proc.returncode == 2
    assert 'Traceback' not in proc.stdout + proc.stderr
    assert proc.stderr.strip() == (
        f'error: {config} has no test_dataloader / test_cfg / '
        'test_evaluator, so there is no test to run; set test_dataloader, '
        'test_cfg, test_evaluator in the config (the demo configs have a '
        'kNN test on data/demo), or measure the checkpoint with python '
        'tools/eval.py CONFIG --checkpoint CKPT --task knn --data ROOT '
        '(labelled ROOT/train and ROOT/val) or --task rank (no labels).'
    )
    assert not (tmp_path / 'w').exists()


def _broken_checkpoints(tmp_path):
    """A torch file cut in half and a text file named .pth, with the
    reason each is refused."""
    whole = tmp_path / 'whole.pth'
    torch.save(dict(state_dict={'w': torch.ones(1000)}), whole)
    cut = tmp_path / 'cut.pth'
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    text = tmp_path / 'notes.pth'
    text.write_text('not weights')
    return {
        str(cut): 'not a complete zip archive',
        str(text): 'not a checkpoint (neither a torch file, a pickle nor '
        '.safetensors)',
    }


def test_eval_cli_refuses_a_broken_checkpoint_first(tmp_path):
    """A truncated or non-checkpoint file is one line (exit 2) before
    any data is read or model built (it gave a zip-reader traceback)."""
    cut, _ = _broken_checkpoints(tmp_path)
    args = [DEMO, '--task', 'rank', '--data', 'no/such/folder',
            '--checkpoint', cut, '--work-dir', 'w']  # fmt: skip
    proc = _cli('eval.py', args, tmp_path)
    assert proc.returncode == 2
    assert 'Traceback' not in proc.stdout + proc.stderr
    assert proc.stderr.strip().startswith(
        f'error: --checkpoint {cut}: not a complete zip archive'
    )
    assert proc.stderr.strip().endswith(
        "pass a complete checkpoint file (the training's epoch_N.pth or a "
        'published .pth / .safetensors).'
    )
    assert not (tmp_path / 'w').exists()


def test_test_tool_refuses_a_broken_checkpoint_first(tmp_path, capsys):
    tool = load_tool('test.py')
    for path, reason in _broken_checkpoints(tmp_path).items():
        work = tmp_path / 'work'
        with pytest.raises(SystemExit) as exit_:
            tool.main([DEMO, path, '--work-dir', str(work)])
        assert exit_.value.code == 2
        line = _the_error_line(capsys.readouterr().err)
        assert line.startswith(f'error: CHECKPOINT {path}: {reason}')
        assert not work.exists()


def test_config_that_does_not_parse_is_one_line(tmp_path, capsys):
    """A config with a Python syntax error: eval.py and test.py say the
    file, the line and its text (exit 2), not the parser's traceback."""
    config = tmp_path / 'broken.py'
    config.write_text(f"_base_ = ['{DEMO}']\nmodel = dict(\n")
    ckpt = tmp_path / 'w.pth'
    torch.save(dict(state_dict={}), ckpt)
    want = (
        f'error: {config} (or a config it inherits) is not valid Python: '
        "'(' was never closed at line 2: model = dict(; fix that line of "
        'the config file.'
    )
    runs = [
        lambda: load_tool('eval.py').main([str(config), '--task', 'rank']),
        lambda: load_tool('test.py').run([str(config), str(ckpt)]),
    ]
    for run in runs:
        with pytest.raises(SystemExit) as exit_:
            run()
        assert exit_.value.code == 2
        assert _the_error_line(capsys.readouterr().err) == want
