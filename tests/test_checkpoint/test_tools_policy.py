"""Every tool and converter that reads a checkpoint, run as a script.

One subprocess (``run_tools.py``, with a timeout) runs every case as
``__main__`` with mmengine's local loader made unsafe on purpose, so each
tool's own policy is what is tested. Per tool: a checkpoint whose payload
would create a marker file is refused with exit status 2 and a message
naming ``--trusted``, without the marker and without output; with the
opt-in the payload runs and the tool finishes. The converters also read a
checkpoint written by mmengine's own Runner without any opt-in.
"""

import glob
import json
import os
import os.path as osp
import subprocess
import sys
import time

import cv2
import numpy as np
import pytest
import torch

from mmssl.checkpoint import load_checkpoint, select_backbone
from mmssl.checkpoint.layouts import (
    MMSSL_MARKER,
    mmssl_to_dinov2,
    mmssl_to_timm,
)
from mmssl.config import load_config
from mmssl.registry import MODELS

from .payload import save_payload_checkpoint

HERE = osp.dirname(osp.abspath(__file__))
ROOT = osp.dirname(osp.dirname(HERE))
CFGS = osp.join(ROOT, 'tests', 'data', 'configs')
TOOLS = {
    'dinov2_to_mmssl': 'model_converters/dinov2_to_mmssl.py',
    'mmssl_to_dinov2': 'model_converters/mmssl_to_dinov2.py',
    'mmssl_to_timm': 'model_converters/mmssl_to_timm.py',
    'publish_model': 'model_converters/publish_model.py',
    'visualize_tsne': 'analysis_tools/visualize_tsne.py',
    'visualize_attention': 'analysis_tools/visualize_attention.py',
    'mae_visualization': 'misc/mae_visualization.py',
    'test': 'test.py',
    'knn_eval': 'misc/knn_eval.py',
}
TIMEOUT = 900


def _images(root):
    rng = np.random.default_rng(0)
    for split, per_class in (('train', 3), ('val', 2)):
        for cls in ('0', '1'):
            folder = osp.join(root, split, cls)
            os.makedirs(folder)
            for i in range(per_class):
                img = rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)
                cv2.imwrite(osp.join(folder, f'{i}.png'), img)
    return root


def _knn_config(tmp, data):
    path = osp.join(tmp, 'simclr_knn.py')
    with open(path, 'w') as f:
        f.write(
            f"_base_ = ['{CFGS}/simclr_tiny.py', "
            f"'{ROOT}/configs/_base_/datasets/demo_knn.py']\n"
            'test_dataloader = dict(batch_size=4, num_workers=0, '
            f"dataset=dict(bank=dict(data_root='{data}'), "
            f"query=dict(data_root='{data}')))\n"
            'test_evaluator = dict(k=2, topk=(1,))\n'
        )
    return path


def _weights(config):
    torch.manual_seed(0)
    return MODELS.build(load_config(config).model).state_dict()


class _Cases:
    """Builds the payload files and the case list."""

    def __init__(self, tmp, mmengine_ckpt):
        self.tmp = tmp
        self.cases = []
        self.real = load_checkpoint(mmengine_ckpt)
        self.mmengine_ckpt = mmengine_ckpt

    def payload(self, name, state_dict):
        """Real mmengine content, ``state_dict`` replaced, plus payload."""
        marker = osp.join(self.tmp, f'{name}.marker')
        base = dict(self.real, state_dict=state_dict)
        path = save_payload_checkpoint(
            osp.join(self.tmp, f'{name}.pth'), marker, base
        )
        return path, marker

    def add(self, name, tool, argv, marker, env=None):
        script = osp.join(ROOT, 'tools', TOOLS[tool])
        self.cases.append(
            dict(
                name=name,
                script=script,
                argv=argv,
                marker=marker,
                env=env or {},
            )
        )

    def out(self, name):
        return osp.join(self.tmp, 'out', name)


def _tool_cases(c, data, knn_cfg):
    img = sorted(glob.glob(osp.join(data, 'val', '0', '*.png')))[0]
    sd = {
        'simclr': _weights(osp.join(CFGS, 'simclr_tiny.py')),
        'vit': _weights(osp.join(CFGS, 'vit_tiny_classifier.py')),
        'mae': _weights(osp.join(CFGS, 'mae_tiny.py')),
        'mmengine': c.real['state_dict'],
    }
    sd['hub'] = mmssl_to_dinov2(select_backbone(c.real['state_dict']))
    argvs = {
        'dinov2_to_mmssl': ('hub', lambda p, o: [p, o + '.pth']),
        'mmssl_to_dinov2': ('mmengine', lambda p, o: [p, o + '.pth']),
        'mmssl_to_timm': ('mmengine', lambda p, o: [p, o + '.pth']),
        'publish_model': ('vit', lambda p, o: [p, o]),
        'visualize_tsne': (
            'simclr',
            lambda p, o: [
                knn_cfg,
                '--checkpoint',
                p,
                '--work-dir',
                o,
                '--data-root',
                osp.join(data, 'val'),
                '--max-num-samples',
                '4',
                '--n-iter',
                '250',
            ],
        ),
        'visualize_attention': (
            'vit',
            lambda p, o: [
                osp.join(CFGS, 'vit_tiny_classifier.py'),
                img,
                '--checkpoint',
                p,
                '--output-dir',
                o,
            ],
        ),
        'mae_visualization': (
            'mae',
            lambda p, o: [img, osp.join(CFGS, 'mae_tiny.py'), p, o + '.png'],
        ),
        'test': ('simclr', lambda p, o: [knn_cfg, p, '--work-dir', o]),
        'knn_eval': ('simclr', lambda p, o: [knn_cfg, '--checkpoint', p]),
    }
    for tool, (weights, argv) in argvs.items():
        for mode in ('refused', 'trusted'):
            name = f'{tool}-{mode}'
            path, marker = c.payload(name, sd[weights])
            args = argv(path, c.out(name))
            env = {}
            if mode == 'trusted':
                if tool == 'mmssl_to_timm':  # the environment opt-in
                    env = {'MMSSL_TRUST_CHECKPOINT': '1'}
                else:
                    args.append('--trusted')
            c.add(name, tool, args, marker, env)
    # default path: a checkpoint written by mmengine's Runner, no opt-in;
    # then the DINOv2 file written by one converter read by another
    for tool in ('mmssl_to_dinov2', 'mmssl_to_timm'):
        name = f'{tool}-mmengine'
        c.add(
            name,
            tool,
            [c.mmengine_ckpt, c.out(name) + '.pth'],
            c.out(name) + '.none',
        )
    name = 'dinov2_to_mmssl-hub'
    c.add(
        name,
        'dinov2_to_mmssl',
        [
            c.out('mmssl_to_dinov2-mmengine') + '.pth',
            c.out(name) + '.pth',
            '--prefix',
            '',
        ],
        c.out(name) + '.none',
    )


@pytest.fixture(scope='module')
def runs(tmp_path_factory, mmengine_checkpoint):
    tmp = str(tmp_path_factory.mktemp('tools_policy'))
    data = _images(osp.join(tmp, 'images'))
    cases = _Cases(tmp, mmengine_checkpoint)
    _tool_cases(cases, data, _knn_config(tmp, data))
    cases_file = osp.join(tmp, 'cases.json')
    results_file = osp.join(tmp, 'results.json')
    with open(cases_file, 'w') as f:
        json.dump(cases.cases, f)
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            osp.join(HERE, 'run_tools.py'),
            cases_file,
            results_file,
        ],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=dict(
            os.environ,
            OMP_NUM_THREADS='1',
            # the checkout, for mmssl and tests.test_checkpoint.payload
            PYTHONPATH=os.pathsep.join(
                [ROOT, os.environ.get('PYTHONPATH', '')]
            ),
        ),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(results_file) as f:
        results = json.load(f)
    results['_seconds'] = time.perf_counter() - start
    results['_out'] = cases.out
    return results


def _outputs(runs, name):
    return glob.glob(runs['_out'](name) + '*')


@pytest.mark.slow
@pytest.mark.parametrize('tool', sorted(TOOLS))
def test_tool_refuses_code_running_checkpoint(runs, tool):
    res = runs[f'{tool}-refused']
    assert res['rc'] == 2, res['stderr']
    assert 'posix.system' in res['stderr']
    assert 'rerun with --trusted' in res['stderr']
    assert 'MMSSL_TRUST_CHECKPOINT=1' in res['stderr']
    assert not res['marker'], 'the payload ran'
    if tool not in ('test', 'knn_eval'):  # those write only logs
        assert not _outputs(runs, f'{tool}-refused'), 'output written'


@pytest.mark.slow
@pytest.mark.parametrize('tool', sorted(TOOLS))
def test_tool_opt_in_loads_the_file(runs, tool):
    res = runs[f'{tool}-trusted']
    assert res['marker'], 'the opt-in did not load the file fully'
    assert res['rc'] == 0, res['stderr']
    if tool != 'knn_eval':
        assert _outputs(runs, f'{tool}-trusted')


@pytest.mark.slow
def test_converters_read_mmengine_checkpoint(runs, mmengine_checkpoint):
    for name in (
        'mmssl_to_dinov2-mmengine',
        'mmssl_to_timm-mmengine',
        'dinov2_to_mmssl-hub',
    ):
        assert runs[name]['rc'] == 0, runs[name]['stderr']
    backbone = select_backbone(
        load_checkpoint(mmengine_checkpoint)['state_dict'],
        marker=MMSSL_MARKER,
    )
    hub = torch.load(
        runs['_out']('mmssl_to_dinov2-mmengine') + '.pth', weights_only=True
    )
    timm = torch.load(
        runs['_out']('mmssl_to_timm-mmengine') + '.pth', weights_only=True
    )
    back = torch.load(
        runs['_out']('dinov2_to_mmssl-hub') + '.pth', weights_only=True
    )['state_dict']
    for got, want in (
        (hub, mmssl_to_dinov2(backbone)),
        (timm, mmssl_to_timm(backbone)),
        (back, backbone),  # round trip through the DINOv2 layout
    ):
        assert list(got) == list(want)
        for key in want:
            assert torch.equal(got[key], want[key]), key
