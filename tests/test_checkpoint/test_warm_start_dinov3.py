"""Warm start of a DINOv3 DINOFamily from a released-layout DINOv3 file.

The warm-start tests in test_warm_start.py check the DINOv3 dispatch with a
stand-in converter; this one goes through the real layout module and the
real backbone: a synthetic hub checkpoint (tests/support/dinov3_ref.py)
is loaded by ``model.warm_start`` with ``format='auto'`` into the DINOv3
demo config's model (patch 16, like the released files), and the student, the
teacher and the Gram teacher then compute the reference features.
"""

import os.path as osp

import pytest
import torch

from mmssl.checkpoint.warm_start import WarmStartError
from mmssl.config import load_config
from mmssl.registry import MODELS
from mmssl.setup_env import register_all_modules
from tests.support.dinov3_ref import (
    PATCH,
    make_hub_state_dict,
    ref_dinov3_forward,
)

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
DEMO = osp.join(ROOT, 'configs/dinov3/dinov3_vit-tiny-p4_1xb64-10e_demo.py')


def _model(checkpoint: str, **warm):
    register_all_modules()
    cfg = load_config(DEMO)
    model_cfg = cfg.model
    model_cfg.backbone.patch_size = PATCH
    model_cfg.backbone.layer_scale_init_value = 1e-5  # hub files have ls
    model_cfg.warm_start = dict(checkpoint=checkpoint, format='auto', **warm)
    from mmssl.config.derived_sizes import resolve_model_sizes

    model = MODELS.build(resolve_model_sizes(model_cfg))
    return model


def _hub_file(tmp_path, **kw) -> str:
    sd = make_hub_state_dict(embed=64, depth=4, heads=4, regs=1, **kw)
    path = str(tmp_path / 'dinov3_vit_hub.pth')
    torch.save(sd, path)
    return path, sd


def test_hub_file_warm_starts_student_teacher_and_gram_teacher(tmp_path):
    path, sd = _hub_file(tmp_path)
    model = _model(path)
    model.init_weights()
    x = torch.randn(2, 3, 2 * PATCH, 3 * PATCH, generator=torch.Generator())
    cls, regs, patches = ref_dinov3_forward(sd, x.double(), heads=4)
    want = torch.cat([cls[:, None], regs, patches], dim=1)  # token order
    for net in (
        model.backbone,
        model.teacher['backbone'],
        model.gram_teacher,
    ):
        net.eval()
        with torch.no_grad():
            got = net(x)[0]  # raw tokens after the final norm
        assert got.shape == want.shape
        assert torch.allclose(got.double(), want, atol=1e-4), (
            (got.double() - want).abs().max()
        )


def test_wrong_width_stops_with_the_load_report(tmp_path):
    # a checkpoint of another width: nothing of the backbone matches
    sd = make_hub_state_dict(embed=32, depth=4, heads=4, regs=1)
    path = str(tmp_path / 'other.pth')
    torch.save(sd, path)
    with pytest.raises(WarmStartError, match='matched'):
        _model(path).init_weights()
