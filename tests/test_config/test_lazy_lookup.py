"""The ``--cfg-options`` key check finds classes through the registries'
lazy ``locations`` (its own and its parents'), so mmssl.config never
imports the engine or ``register_all_modules``."""

import os
import os.path as osp
import subprocess
import sys

import pytest
from mmengine.registry import Registry

from mmssl.config.options import _import_locations

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def test_a_childs_lookup_imports_its_parents_locations(tmp_path, monkeypatch):
    (tmp_path / 'toy_parent_mod.py').write_text('FILLED = True\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, 'toy_parent_mod', raising=False)
    parent = Registry('toy', scope='toyparent', locations=['toy_parent_mod'])
    child = Registry('toy', parent=parent, scope='toychild', locations=[])
    child.get('Anything')  # mmengine imports the child's locations only
    assert 'toy_parent_mod' not in sys.modules
    _import_locations(child)
    assert sys.modules['toy_parent_mod'].FILLED


@pytest.mark.slow  # one fresh interpreter (torch, mmpretrain imports)
def test_key_check_in_a_fresh_process_needs_no_registration(tmp_path):
    code = (
        'import sys\n'
        'from mmssl.config.reading import load_config\n'
        f'cfg = load_config({DEMO!r}, {{"model.neck.with_last_bn": 0}})\n'
        'print(cfg.model.neck.with_last_bn)\n'
        'print("mmssl.setup_env" in sys.modules)\n'
        'try:\n'
        f'    load_config({DEMO!r}, {{"train_cfg.max_epoch": 3}})\n'
        'except Exception as exc:\n'
        '    print(type(exc).__name__)\n'
    )
    env = dict(os.environ, PYTHONPATH=ROOT)  # this checkout's mmssl
    proc = subprocess.run(
        [sys.executable, '-c', code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    # with_last_bn is an argument of mmpretrain's NonLinearNeck, found by
    # the lookup; max_epoch (a typo of max_epochs) is refused
    lines = proc.stdout.splitlines()[-3:]  # after mmengine's log lines
    assert lines == ['0', 'False', 'UnknownConfigKeyError']


DEMO = osp.join(ROOT, 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py')
