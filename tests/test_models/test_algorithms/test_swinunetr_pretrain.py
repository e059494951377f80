"""SwinUNETRPretrain (Tang et al., 2022) and its pretext augmentations,
against values recomputed by hand (NumPy rotations, explicit loops)."""

import math

import numpy as np
import pytest
import torch

from mmssl.models.utils.volume_pretext import (
    cutout_mask,
    cutout_volumes,
    random_rotations,
    rotate_volumes,
)
from mmssl.registry import MODELS
from mmssl.setup_env import register_all_modules

pytest.importorskip('monai')
register_all_modules()

# A tiny SwinViT (inputs must be multiples of 32 voxels)
_SWIN = dict(
    type='SwinViT3D',
    feature_size=12,
    depths=(1, 1, 1, 1),
    num_heads=(1, 1, 2, 2),
    window_size=4,
)


def _model(**kw) -> torch.nn.Module:
    cfg = dict(
        type='SwinUNETRPretrain',
        backbone=_SWIN,
        neck=dict(
            type='NonLinearNeck',
            in_channels=192,
            hid_channels=32,
            out_channels=16,
            with_avg_pool=False,
            norm_cfg=dict(type='BN1d'),
        ),
        con_loss=dict(type='NTXentLoss', temperature=0.3, gather=False),
    )
    cfg.update(kw)
    model = MODELS.build(cfg)
    model.init_weights()
    return model


def _np_rot(vol: torch.Tensor, k: int, plane=(0, 1)) -> np.ndarray:
    """(C, *spatial) volume rotated by NumPy."""
    axes = tuple(a + 1 for a in plane)
    return np.rot90(vol.numpy(), int(k), axes=axes).copy()


def test_rotate_volumes_matches_numpy():
    x = torch.randn(4, 2, 3, 3, 5)
    k = torch.tensor([0, 1, 2, 7])  # 7 = 3 quarter turns
    out = rotate_volumes(x, k, plane=(0, 1))
    for i in range(4):
        np.testing.assert_array_equal(
            out[i].numpy(), _np_rot(x[i], k[i] % 4, (0, 1))
        )
    y = torch.randn(1, 1, 2, 4, 4)
    out = rotate_volumes(y, torch.tensor([1]), plane=(1, 2))
    np.testing.assert_array_equal(out[0].numpy(), _np_rot(y[0], 1, (1, 2)))
    with pytest.raises(ValueError, match='equal sides'):
        rotate_volumes(torch.randn(1, 1, 2, 4, 4), torch.tensor([1]), (0, 1))
    with pytest.raises(ValueError, match='spatial axes'):
        rotate_volumes(x, k, plane=(0, 3))


def test_random_rotations_labels_are_the_applied_rotation():
    torch.manual_seed(0)
    x = torch.randn(16, 1, 4, 4, 4)
    out, labels = random_rotations(x, plane=(1, 2))
    assert labels.dtype == torch.int64 and set(labels.tolist()) <= {
        0,
        1,
        2,
        3,
    }
    assert len(set(labels.tolist())) == 4  # 16 draws hit every class
    for i in range(16):
        np.testing.assert_array_equal(
            out[i].numpy(), _np_rot(x[i], labels[i], (1, 2))
        )
        # the label is the only rotation that gives this output
        others = [k for k in range(4) if k != labels[i]]
        for k in others:
            assert not np.array_equal(out[i].numpy(), _np_rot(x[i], k, (1, 2)))


def test_cutout_mask_covers_the_ratio_with_boxes():
    torch.manual_seed(0)
    mask = cutout_mask((16, 16, 16), 0.3, block_size=(0.125, 0.25))
    share = mask.float().mean().item()
    # boxes of at most 4^3 voxels are added until 30 % is covered
    assert 0.3 <= share < 0.3 + 64 / 16**3
    assert not cutout_mask((8, 8, 8), 0.0).any()
    with pytest.raises(ValueError, match='mask_ratio'):
        cutout_mask((8, 8, 8), 1.0)


def test_cutout_volumes_keeps_uncut_voxels_and_noise_in_range():
    torch.manual_seed(0)
    x = torch.rand(3, 2, 8, 8, 8) * 5 + 2  # values in [2, 7]
    out, masks = cutout_volumes(x, 0.4, block_size=(0.25, 0.5))
    assert masks.shape == (3, 1, 8, 8, 8) and masks.dtype == torch.bool
    for i in range(3):
        keep = ~masks[i].expand(2, -1, -1, -1)
        assert torch.equal(out[i][keep], x[i][keep])
        cut = out[i][~keep]
        assert masks[i].float().mean() >= 0.4
        assert (cut >= x[i].min()).all() and (cut <= x[i].max()).all()
        assert not torch.equal(cut, x[i][~keep])  # noise, not the volume


def test_conv_transpose_decoder_upsamples_to_the_volume():
    dec = MODELS.build(
        dict(type='ConvTransposeDecoder3D', in_channels=24, scale=8)
    )
    out = dec((torch.randn(2, 24, 1, 2, 3),))
    assert out.shape == (2, 1, 8, 16, 24)
    with pytest.raises(ValueError, match='power of two'):
        MODELS.build(
            dict(type='ConvTransposeDecoder3D', in_channels=8, scale=6)
        )


def _capture_augment(model):
    """Keep what ``model.augment`` returns on its next call."""
    seen = {}
    original = model.augment

    def wrapper(views):
        seen['views'] = views.clone()
        seen['batch'] = original(views)
        return seen['batch']

    model.augment = wrapper
    return seen


def _nt_xent_by_loop(z: torch.Tensor, partner: list, t: float) -> float:
    z = [v / v.norm() for v in z.double()]
    total = 0.0
    for i, zi in enumerate(z):
        sims = [float(zi @ zj) / t for j, zj in enumerate(z) if j != i]
        log_sum = math.log(sum(math.exp(s) for s in sims))
        total += log_sum - float(zi @ z[partner[i]]) / t
    return total / len(z)


def test_loss_terms_match_hand_computation():
    torch.manual_seed(0)
    model = _model(mask_ratio=0.25)
    B = 3
    v1, v2 = torch.rand(B, 1, 32, 32, 32), torch.rand(B, 1, 32, 32, 32)
    seen = _capture_augment(model)
    losses = model.loss([v1, v2], None)
    batch = seen['batch']
    labels = batch.rot_labels.tolist()
    # rows 2k and 2k + 1 are views 1 and 2 of sample k, rotated by their
    # label; the target is that rotation of the ORIGINAL (un-cut) view
    originals = [v for k in range(B) for v in (v1[k], v2[k])]
    for row, (orig, lab) in enumerate(zip(originals, labels)):
        expected = _np_rot(orig, lab)
        np.testing.assert_array_equal(batch.targets[row].numpy(), expected)
        keep = ~batch.masks[row].numpy()
        got = batch.inputs[row].numpy()
        np.testing.assert_array_equal(got[keep], expected[keep])
        assert keep.mean() <= 0.75  # 25 % replaced by noise

    with torch.no_grad():
        feats = model.backbone(batch.inputs)[-1]
        pooled = feats.mean(dim=(2, 3, 4))
        logits = model.rot_head(pooled).double()
        z = model.neck((pooled,))[0]
        recon = model.decoder(feats).double()
    rot = sum(
        torch.logsumexp(logits[i], 0).item() - logits[i, lab].item()
        for i, lab in enumerate(labels)
    ) / len(labels)
    # positives: the other view of the same sample
    partner = [2 * (i // 2) + (1 - i % 2) for i in range(2 * B)]
    con = _nt_xent_by_loop(z, partner, 0.3)
    target = np.stack([_np_rot(o, lab) for o, lab in zip(originals, labels)])
    rec = np.abs(recon.numpy() - target).mean()
    assert losses['loss_rot'].item() == pytest.approx(rot, rel=1e-4)
    assert losses['loss_con'].item() == pytest.approx(con, rel=1e-4)
    assert losses['loss_rec'].item() == pytest.approx(rec, rel=1e-4)


def test_total_loss_is_the_weighted_sum():
    torch.manual_seed(0)
    plain = _model()
    weighted = _model(rot_weight=0.5, con_weight=2.0, rec_weight=3.0)
    weighted.load_state_dict(plain.state_dict())
    views = [torch.rand(2, 1, 32, 32, 32) for _ in range(2)]
    torch.manual_seed(1)
    a = plain.loss(views, None)
    torch.manual_seed(1)  # the same rotations and cutouts
    b = weighted.loss(views, None)
    for key, w in (('loss_rot', 0.5), ('loss_con', 2.0), ('loss_rec', 3.0)):
        assert b[key].item() == pytest.approx(w * a[key].item(), rel=1e-5)
    total, log = weighted.parse_losses(b)
    expect = 0.5 * a['loss_rot'] + 2 * a['loss_con'] + 3 * a['loss_rec']
    assert total.item() == pytest.approx(expect.item(), rel=1e-5)
    assert set(log) >= {'loss', 'loss_rot', 'loss_con', 'loss_rec'}


def test_one_training_step_moves_every_part():
    from mmengine.optim import OptimWrapper

    torch.manual_seed(0)
    model = _model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    optim = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1))
    views = [torch.rand(2, 1, 32, 32, 32) for _ in range(2)]
    data = dict(inputs=views, data_samples=None)
    log = model.train_step(data, optim)
    assert math.isfinite(log['loss'].item())
    after = model.state_dict()
    for part in (
        'backbone.swinViT.patch_embed.proj.weight',
        'backbone.swinViT.layers4.0.blocks.0.attn.qkv.weight',
        'rot_head.fc.weight',
        'neck.fc0.weight',
        'decoder.layers.0.weight',
    ):
        assert not torch.equal(before[part], after[part]), part


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match='two views'):
        _model().loss([torch.rand(2, 1, 32, 32, 32)], None)
    with pytest.raises(ValueError, match='num_rotations'):
        _model(rot_head=dict(type='PretextClsHead', num_classes=2))
    with pytest.raises(ValueError, match='mask_ratio'):
        _model(mask_ratio=1.0)
    with pytest.raises(ValueError, match="out_type='featmap'"):
        _model(backbone=dict(_SWIN, out_type='avg_featmap'))
