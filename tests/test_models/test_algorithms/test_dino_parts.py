"""The plumbing of the DINO family (``dino_parts``), function by function.

Expected values are written out by hand (tiny tensors with known entries),
so each test fails on a swapped axis, a lost branch or a changed default.
"""

import re

import pytest
import torch
from mmengine.model import BaseModule
from mmpretrain.structures import DataSample
from torch import nn

from mmssl.models.algorithms.dino_parts import (
    build_terms,
    forward_backbone,
    global_masks,
    masked_tokens,
    patch_grid,
    resize_patch_grid,
    split_views,
    strip_for_teacher,
)


def _raises(exc, message):
    """pytest.raises for the whole message, read literally."""
    return pytest.raises(exc, match='^' + re.escape(message) + '$')


class _Tokens(nn.Module):
    """Returns fixed tokens (B, 1 + R + N, C); records the mask it got."""

    def __init__(self, out, num_extra=None, as_list=False):
        super().__init__()
        self.out, self.as_list, self.masks = out, as_list, []
        if num_extra is not None:
            self.num_extra_tokens = num_extra

    def forward(self, x, mask=None):
        self.masks.append(mask)
        return [self.out * 0 - 1, self.out] if self.as_list else self.out


def test_strip_for_teacher_turns_off_every_training_only_switch():
    class Block(BaseModule):
        def __init__(self):
            super().__init__(init_cfg=dict(type='Pretrained', checkpoint='x'))
            self.drop = nn.Dropout(0.3)
            self.lin = nn.Linear(2, 2)
            self.drop_prob = 0.2  # like DropPath
            self.with_cp = True

    block = Block()
    assert strip_for_teacher(block) is block
    assert block.drop.p == 0.0 and block.drop_prob == 0.0
    assert block.with_cp is False and block.init_cfg is None
    assert not any(p.requires_grad for p in block.parameters())


def test_forward_backbone_token_layouts():
    out = torch.arange(2 * 5 * 3, dtype=torch.float).view(2, 5, 3)
    # CLS first, then (num_extra_tokens - 1) registers, then the patches
    cls, patches = forward_backbone(_Tokens(out, num_extra=2), None)
    assert torch.equal(cls, out[:, 0]) and torch.equal(patches, out[:, 2:])
    # default: one extra token (CLS); a list output uses its last item
    bb = _Tokens(out, as_list=True)
    mask = torch.ones(2, 4, dtype=torch.bool)
    cls, patches = forward_backbone(bb, None, mask)
    assert torch.equal(cls, out[:, 0]) and torch.equal(patches, out[:, 1:])
    assert bb.masks == [mask]
    forward_backbone(bb, None)
    assert bb.masks[-1] is None
    # CNN map (B, C, H, W): mean over the spatial grid, no patches
    fmap = torch.tensor([[[[1.0, 3.0]], [[2.0, 10.0]]]])  # (1, 2, 1, 2)
    cls, patches = forward_backbone(_Tokens(fmap), None)
    assert cls.tolist() == [[2.0, 6.0]] and patches is None
    feat = torch.tensor([[1.0, 2.0]])
    cls, patches = forward_backbone(_Tokens(feat), None)
    assert cls is feat and patches is None
    with pytest.raises(
        ValueError, match=r'Unsupported backbone output \(3,\)'
    ):
        forward_backbone(_Tokens(torch.zeros(3)), None)


def _v(value, size, batch=2):
    return torch.full((batch, 3, size, size), float(value))


def test_split_views_groups_runs_of_same_size_locals():
    views = [_v(0, 8), _v(1, 8), _v(2, 4), _v(3, 4), _v(4, 6), _v(5, 4)]
    global_x, local, gram = split_views(views, 2)
    assert gram is None
    assert global_x.shape == (4, 3, 8, 8)
    assert global_x[:, 0, 0, 0].tolist() == [0, 0, 1, 1]
    assert [x.shape[0] for x in local] == [4, 2, 2]
    assert [x[:, 0, 0, 0].tolist() for x in local] == [
        [2, 2, 3, 3],
        [4, 4],
        [5, 5],
    ]
    # the last num_gram views are the Gram crops, not local crops
    global_x, local, gram = split_views(
        [_v(0, 8), _v(1, 8), _v(2, 4), _v(7, 12), _v(8, 12)], 2, 2
    )
    assert gram[:, 0, 0, 0].tolist() == [7, 7, 8, 8]
    assert [x[:, 0, 0, 0].tolist() for x in local] == [[2, 2]]
    # exactly two views and no local crop is fine
    assert split_views([_v(0, 8), _v(1, 8)], 2)[1] == []
    assert split_views((_v(0, 8), _v(1, 4)), 1)[0].shape == (2, 3, 8, 8)


def test_split_views_errors():
    msg = 'DINO-style training needs a list of views (use the MultiCrop '
    with _raises(TypeError, msg + 'transform).'):
        split_views(_v(0, 8), 2)
    msg = (
        'Got {} views but num_global_crops={} (and {} Gram crops); DINO '
        'needs the G global crops first and at least 2 views.'
    )
    with _raises(ValueError, msg.format(3, 2, 2)):
        split_views([_v(0, 8)] * 3, 2, 2)
    with _raises(ValueError, msg.format(1, 1, 0)):
        split_views([_v(0, 8)], 1)


def _sample(mask):
    return DataSample().set_mask(torch.as_tensor(mask))


def test_global_masks_are_crop_major_and_flat():
    # image 0: crop 0 masks patch 0, crop 1 patch 3; image 1: crop 1 patch 1
    grids = [
        [[[1, 0], [0, 0]], [[0, 0], [0, 1]]],
        [[[0, 0], [0, 0]], [[0, 1], [0, 0]]],
    ]
    masks = global_masks([_sample(g) for g in grids], 2, 'cpu')
    assert masks.dtype == torch.bool
    assert masks.int().tolist() == [
        [1, 0, 0, 0],  # crop 0, image 0
        [0, 0, 0, 0],  # crop 0, image 1
        [0, 0, 0, 1],  # crop 1, image 0
        [0, 1, 0, 0],  # crop 1, image 1
    ]
    flat = [torch.tensor(g).flatten(1) for g in grids]  # (G, P) per image
    assert torch.equal(
        global_masks([_sample(f) for f in flat], 2, 'cpu'), masks
    )


def test_global_masks_errors():
    msg = (
        'The ibot_patch term needs patch masks in data_sample.mask: add '
        'BlockwiseMaskGenerator after MultiCrop in the pipeline (or the '
        'block_mask_collate collate function).'
    )
    with _raises(ValueError, msg):
        global_masks([], 2, 'cpu')
    with _raises(ValueError, msg):
        global_masks([DataSample()], 2, 'cpu')
    three = _sample(torch.zeros(3, 2, 2, dtype=torch.bool))
    msg = 'data_sample.mask has 3 crops per image, expected '
    with _raises(ValueError, msg + 'num_global_crops=2.'):
        global_masks([three], 2, 'cpu')


def test_masked_tokens_selects_and_explains():
    patches = torch.arange(2 * 3 * 1.0).view(2, 3, 1)
    masks = torch.tensor([[True, False, True], [False, True, False]])
    assert masked_tokens(patches, masks).flatten().tolist() == [0, 2, 4]
    assert masked_tokens(patches, None) is None
    assert masked_tokens(None, None) is None
    msg = 'Patch terms need patch tokens: build the backbone with out_type'
    with _raises(ValueError, msg + "='raw'."):
        masked_tokens(None, masks)
    msg = (
        'The masks have 2 patches per crop but the backbone gives 3 patch '
        'tokens: set the mask generator input_size to global crop size // '
        'patch size.'
    )
    with _raises(ValueError, msg):
        masked_tokens(patches, masks[:, :2])


def test_patch_grid_and_resize():
    assert patch_grid(torch.zeros(1, 3, 32, 48), 24) == (4, 6)
    assert patch_grid(torch.zeros(3, 14, 14), 1) == (1, 1)
    assert patch_grid(torch.zeros(1, 1, 2), 2) == (1, 2)
    # a ViT drops the border that does not fill a patch: 33x50, 8 px
    assert patch_grid(torch.zeros(1, 3, 33, 50), 24) == (4, 6)
    msg = '5 patch tokens do not tile a 32x48 image with square patches.'
    with _raises(ValueError, msg):
        patch_grid(torch.zeros(1, 3, 32, 48), 5)
    same = torch.randn(2, 4, 3)
    assert resize_patch_grid(same, (2, 2), [2, 2]) is same
    # a linear ramp along the width: bicubic keeps it linear inside, and
    # halving a 1x4 grid to 1x2 samples at source x = 0.5 and 2.5
    ramp = torch.tensor([0.0, 1.0, 2.0, 3.0]).view(1, 4, 1).double()
    out = resize_patch_grid(ramp, (1, 4), (1, 2))
    assert out.shape == (1, 2, 1) and out.dtype == torch.float64  # kept
    assert resize_patch_grid(ramp.half(), (1, 4), (1, 2)).dtype == (
        torch.float32  # 16-bit features resize in float32
    )
    # bicubic (A=-0.75) at t=0.5: weights (-3, 19, 19, -3) / 32 on the
    # samples at -1, 0, 1, 2 (border clamped: 0, 0, 1, 2) -> 13/32, and
    # 83/32 by symmetry; bilinear would give 0.5 and 2.5, align_corners=True
    # 0 and 3
    assert out.flatten().tolist() == pytest.approx([13 / 32, 83 / 32])
    # channels stay apart: (B, h*w, C) with C = 2, the second is negated
    two = torch.cat([ramp, -ramp], dim=2).float()
    out2 = resize_patch_grid(two, (1, 4), (1, 2))
    assert torch.allclose(out2[..., 1], -out2[..., 0])
    # a 2x2 source grid: rows and columns are not swapped
    grid = torch.tensor([[0.0], [1.0], [10.0], [11.0]]).view(1, 4, 1)
    up = resize_patch_grid(grid, (2, 2), (4, 2)).view(4, 2)
    assert up[:, 1].sub(up[:, 0]).tolist() == pytest.approx([1.0] * 4)
    with pytest.raises(ValueError, match=r'5 patch tokens do not form a'):
        resize_patch_grid(torch.zeros(1, 5, 2), (2, 2), (1, 1))


def test_build_terms_weights_and_errors():
    model = nn.Module()
    terms = dict(
        dino_cls=dict(type='DINOLoss', out_dim=4),
        koleo=dict(type='KoLeoLoss', weight=0.25),
    )
    keys = dict(dino_cls='dino', koleo='kl', ibot_patch='ibot', gram='gram')
    weights = build_terms(model, terms, keys, dict(dino_local=0.5))
    assert weights == dict(dino=1.0, kl=0.25, dino_local=0.5)
    assert terms['koleo'] == dict(type='KoLeoLoss', weight=0.25)  # not popped
    assert type(model.dino_loss).__name__ == 'DINOLoss'
    assert type(model.koleo_loss).__name__ == 'KoLeoLoss'
    assert build_terms(nn.Module(), terms, keys, None) == dict(
        dino=1.0, kl=0.25
    )
    assert build_terms(nn.Module(), terms, keys, dict(kl=2.0))['kl'] == 2.0
    msg = r"Unknown loss_weights keys \['koleo'\]; Module has \['dino', 'kl'\]"
    with pytest.raises(ValueError, match=msg):
        build_terms(nn.Module(), terms, keys, dict(koleo=1.0))
    msg = r"among \['dino_cls', 'ibot_patch', 'koleo', 'gram'\], got \['bo"
    with pytest.raises(ValueError, match=msg):
        build_terms(nn.Module(), dict(terms, bogus={}), keys, None)
    with pytest.raises(ValueError, match='must include dino_cls'):
        build_terms(nn.Module(), dict(koleo=dict(type='KoLeoLoss')), keys, {})
