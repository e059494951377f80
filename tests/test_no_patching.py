"""Importing mmssl changes nothing in mmengine and does not import torch."""

import os.path as osp
import subprocess
import sys

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))

# Runs in a fresh interpreter: the test session has imported everything.
_CHECK = """
import sys
import mmengine.config.config as cfg_mod
import mmengine.runner as runner_pkg
import mmengine.runner.checkpoint as ckpt_mod
import mmengine.runner.runner as runner_mod
import mmengine.utils as utils_pkg
import mmengine.utils.package_utils as pkg_utils

def snapshot():
    objs = dict(
        schemes=dict(ckpt_mod.CheckpointLoader._schemes),
        save=ckpt_mod.save_checkpoint,
        runner_save=runner_mod.save_checkpoint,
        pkg_save=runner_pkg.save_checkpoint,
        worker_init=runner_mod.default_worker_init_fn,
    )
    for mod in (cfg_mod, utils_pkg, pkg_utils):
        for name in ('is_installed', 'get_installed_path'):
            objs[f'{mod.__name__}.{name}'] = getattr(mod, name)
    return objs

before = snapshot()
import mmssl
from mmssl.setup_env import register_all_modules
register_all_modules()
from mmssl.config import load_config
cfg = load_config(
    'configs/mocov2/mocov2_resnet50_8xb32-coslr-200e_in1k.py')
assert cfg.model.type == 'MoCo', cfg.model.type
after = snapshot()
changed = []
for key, old in before.items():
    new = after[key]
    if key == 'schemes':
        if new.keys() != old.keys() or any(new[k] is not old[k] for k in old):
            changed.append(key)
    elif new is not old:
        changed.append(key)
assert not changed, f'mmssl replaced mmengine objects: {changed}'
print('unchanged', len(before))
"""


def _run(code: str) -> str:
    out = subprocess.run(
        [sys.executable, '-c', code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_import_mmssl_is_light():
    """``import mmssl`` checks versions only: no torch, no mmengine."""
    out = _run(
        'import sys, mmssl;'
        "print(sorted(m for m in ('torch', 'mmengine', 'mmcv', "
        "'mmpretrain') if m in sys.modules))"
    )
    assert out.strip() == '[]'


def test_import_and_register_patch_nothing():
    assert 'unchanged 11' in _run(_CHECK)
