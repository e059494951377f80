"""Checked and stand-in target networks; mmpretrain:: config bases."""

import os.path as osp

import pytest
import torch

from mmssl.config import load_config
from mmssl.registry import MODELS

ROOT = osp.dirname(
    osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
)


@pytest.mark.parametrize(
    'cfg, option',
    [
        (
            dict(type='PretrainedCLIPTarget', tokenizer_path=None),
            'model.target_generator.tokenizer_path',
        ),
        (
            dict(type='PretrainedCLIPTarget', tokenizer_path='/no/clip.pth'),
            'model.target_generator.tokenizer_path',
        ),
        (
            dict(type='PretrainedDALLETarget'),
            'model.target_generator.init_cfg.checkpoint',
        ),
        (
            dict(
                type='PretrainedVQKDTarget',
                encoder_config=dict(),
                init_cfg=dict(type='Pretrained', checkpoint='/no/vqkd.pth'),
            ),
            'model.target_generator.init_cfg.checkpoint',
        ),
    ],
)
def test_missing_target_checkpoint_says_what_to_do(cfg, option):
    with pytest.raises(FileNotFoundError) as err:
        MODELS.build(cfg)
    message = str(err.value)
    assert option in message and 'download' in message.lower()
    if cfg.get('tokenizer_path'):
        assert '/no/clip.pth' in message


def test_stand_in_clip_target_shapes():
    target = MODELS.build(
        dict(
            type='StandInCLIPTarget',
            img_size=32,
            patch_size=4,
            embed_dims=8,
            out_dims=12,
        )
    )
    feats, attn = target(torch.randn(2, 3, 32, 32))
    assert feats.shape == (2, 65, 12)
    assert attn.shape == (2, 65, 65)
    assert torch.allclose(attn.sum(-1), torch.ones(2, 65))
    assert not any(p.requires_grad for p in target.parameters())


def _token_cosine(feats: torch.Tensor) -> float:
    """Mean cosine between the patch tokens of one image."""
    tokens = torch.nn.functional.normalize(feats[:, 1:], dim=-1)
    return (tokens @ tokens.transpose(1, 2)).mean().item()


def test_stand_in_clip_target_residual_gives_each_token_its_patch():
    """Without the residual the near-uniform random attention gives every
    token of an image almost the same target; with it, the target is the
    same attention output plus the projected token (computed here by
    hand from the module's weights)."""
    cfg = dict(type='StandInCLIPTarget', img_size=64, patch_size=8)
    torch.manual_seed(0)
    plain = MODELS.build(cfg)
    torch.manual_seed(0)
    residual = MODELS.build(dict(cfg, residual=True))
    x = torch.randn(2, 3, 64, 64)
    feats, attn = plain(x)
    feats_res, attn_res = residual(x)
    torch.testing.assert_close(attn_res, attn)
    tokens = plain.patch_embed(x).flatten(2).transpose(1, 2)
    cls = plain.cls_token.expand(2, -1, -1)
    tokens = torch.cat([cls, tokens], dim=1) + plain.pos_embed
    expected = feats + tokens @ plain.proj.weight.T
    torch.testing.assert_close(feats_res, expected)
    assert _token_cosine(feats) > 0.98
    assert _token_cosine(feats_res) < 0.9


def test_mmpretrain_config_base_resolves():
    cfg = load_config(
        osp.join(
            ROOT, 'configs/mocov2/mocov2_resnet50_8xb32-coslr-200e_in1k.py'
        )
    )
    assert cfg.default_scope == 'mmssl'
    assert cfg.model.type == 'MoCo' and cfg.model.queue_len == 65536


def test_hog_under_cpu_autocast_is_the_float32_hog():
    """mmpretrain's HOGGenerator fails under bfloat16 CPU autocast (the
    CPU fallback of an AMP config); FloatHOGGenerator gives the float32
    features there."""
    cfg = dict(nbins=9, pool=2, gaussian_window=4)  # the demo's
    torch.manual_seed(0)
    x = torch.randn(2, 3, 56, 56)  # a 14x14 grid of 4 px patches
    plain = MODELS.build(dict(type='HOGGenerator', **cfg))
    safe = MODELS.build(dict(type='FloatHOGGenerator', **cfg))
    expected = plain(x)
    assert expected.shape == (2, 14 * 14, 3 * 9 * 2 * 2)  # 2x2 cells
    with torch.autocast('cpu', dtype=torch.bfloat16):
        with pytest.raises(RuntimeError, match='dtype'):
            plain(x)
        got = safe(x)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, expected)


def test_patch_hog_generator_matches_mmpretrain_and_fits_any_grid():
    """PatchHOGGenerator: mmpretrain's HOG at 14 tokens a side, and one
    token per patch of the cells inside it on another grid (8x8 here)."""
    from mmpretrain.models.selfsup.maskfeat import HOGGenerator

    cfg = dict(nbins=9, pool=2, gaussian_window=4)
    gen = MODELS.build(dict(type='PatchHOGGenerator', patch_size=4, **cfg))
    torch.manual_seed(0)
    x = torch.randn(2, 3, 56, 56)
    torch.testing.assert_close(gen(x), HOGGenerator(**cfg)(x))
    x = torch.randn(2, 3, 32, 32)
    out = gen(x)
    assert out.shape == (2, 64, 3 * 9 * 2 * 2)
    cells = gen.out  # (B, 3, nbins, 16, 16): the histograms of 2x2 px cells
    for i, j in ((0, 0), (2, 5), (7, 7)):
        block = cells[:, :, :, 2 * i : 2 * i + 2, 2 * j : 2 * j + 2]
        torch.testing.assert_close(out[:, 8 * i + j], block.reshape(2, -1))
    with pytest.raises(ValueError, match='multiple of pool'):
        MODELS.build(dict(type='PatchHOGGenerator', patch_size=3, **cfg))
    plain = dict(type='PatchHOGGenerator', patch_size=4, nbins=9, pool=2)
    no_window = MODELS.build(dict(plain, gaussian_window=0))
    with pytest.raises(ValueError, match='multiple of patch_size'):
        no_window(torch.randn(1, 3, 34, 34))  # 17 cells a side
