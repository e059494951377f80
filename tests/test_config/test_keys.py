"""Unknown top-level config keys stop the run with a did-you-mean."""

import os
import os.path as osp
import subprocess
import sys

import pytest

from mmssl.config.keys import check_top_level_keys, foreign_base_keys
from mmssl.config.options import UnknownConfigKeyError

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
DEMO = osp.join(ROOT, 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py')


def test_unknown_key_names_the_nearest_known_one():
    with pytest.raises(UnknownConfigKeyError) as err:
        check_top_level_keys(['model', 'output_dir', '_mine'], 'x.py')
    text = str(err.value)
    assert 'Unknown top-level config key `output_dir` in x.py' in text
    assert 'Did you mean `work_dir`?' in text
    assert '`_`' in text  # the opt-out is named
    assert '_mine' not in text


def test_known_conventional_and_private_keys_pass():
    check_top_level_keys(
        ['model', 'work_dir', 'runner_type', 'train_pipeline', '_x']
    )
    check_top_level_keys(['extra'], allowed=['extra'])


def test_keys_of_another_packages_base_are_allowed():
    path = osp.join(
        ROOT, 'configs/byol/byol_resnet50_16xb256-coslr-200e_in1k.py'
    )
    keys = foreign_base_keys(path)
    assert {'train_pipeline', 'optimizer'} <= keys  # mmpretrain's names
    assert 'optimizer' not in foreign_base_keys(DEMO)  # mmssl bases only


@pytest.mark.slow
def test_train_cli_refuses_an_unknown_key(tmp_path):
    config = tmp_path / 'mine.py'
    config.write_text(
        f'_base_ = {DEMO!r}\n'
        "output_dir = 'runs/mine'\n"
        '_my_note = 1  # private: allowed\n'
    )
    env = dict(os.environ, PYTHONPATH=ROOT)  # this checkout's mmssl
    proc = subprocess.run(
        [
            sys.executable,
            osp.join(ROOT, 'tools/train.py'),
            str(config),
            '--work-dir',
            str(tmp_path / 'work'),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    assert 'Unknown top-level config key `output_dir`' in proc.stderr
    assert 'Did you mean `work_dir`?' in proc.stderr
    assert '_my_note' not in proc.stderr
    assert not (tmp_path / 'work' / 'epoch_1.pth').exists()
