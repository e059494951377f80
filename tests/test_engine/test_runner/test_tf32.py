"""``env_cfg.tf32``: float32 matmuls on CUDA use TF32 unless a config
says no, as the DINOv2 reference trains. (tests/conftest.py restores the
process-wide flags after each test.)"""

import pytest
import torch

from mmssl.config.options import RUNNER_KNOWN_KEYS
from mmssl.engine.runner import build_runner
from mmssl.engine.runner.runner import set_tf32
from tests.support.resume import tiny_cfg

DEMO = 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py'


def _flags():
    return (
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
    )


def test_runner_turns_tf32_on_by_default_and_off_on_request(
    demo_data_root, tmp_path
):
    set_tf32(False)
    build_runner(tiny_cfg(DEMO, demo_data_root, str(tmp_path / 'a')))
    assert _flags() == (True, True)
    cfg = tiny_cfg(DEMO, demo_data_root, str(tmp_path / 'b'))
    cfg.env_cfg.tf32 = False
    build_runner(cfg)
    assert _flags() == (False, False)


def test_a_non_bool_names_the_key_and_the_fix():
    with pytest.raises(TypeError, match=r"env_cfg.tf32 .* got 'yes'"):
        set_tf32('yes')
    # --cfg-options env_cfg.tf32=False is accepted on configs without it
    assert 'env_cfg.tf32' in RUNNER_KNOWN_KEYS
