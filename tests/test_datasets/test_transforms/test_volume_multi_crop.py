"""MultiCrop3D and the 3D block masks, checked against direct numpy."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mmssl.datasets.transforms import (
    BlockwiseMaskGenerator3D,
    MultiCrop3D,
    blockwise_mask_3d,
)

PLAIN = dict(flip_prob=0.0, rot90_prob=0.0, intensity_prob=0.0)


def _vol(shape=(1, 16, 16, 16)):
    return torch.arange(float(np.prod(shape))).reshape(shape)


def test_views_sizes_and_count():
    t = MultiCrop3D(global_size=16, local_size=8, num_global=2, num_local=3)
    out = t(dict(img=_vol((1, 20, 24, 28))))
    assert [tuple(v.shape) for v in out['img']] == [(1, 16, 16, 16)] * 2 + [
        (1, 8, 8, 8)
    ] * 3
    assert out['num_global_crops'] == 2
    assert all(type(v) is torch.Tensor for v in out['img'])


def test_full_crop_is_a_trilinear_resize():
    vol = _vol((1, 8, 8, 8))
    t = MultiCrop3D(
        global_size=8,
        local_size=4,
        num_global=1,
        num_local=1,
        global_scale=(1.0, 1.0),
        local_scale=(1.0, 1.0),
        aspect=(1.0, 1.0),
        **PLAIN,
    )
    g, loc = t(dict(img=vol))['img']
    torch.testing.assert_close(g, vol)  # whole volume at its own size
    want = F.interpolate(vol[None], size=(4, 4, 4), mode='trilinear')[0]
    torch.testing.assert_close(loc, want)


def test_crop_is_a_box_of_the_volume():
    vol = _vol((1, 16, 16, 16))
    t = MultiCrop3D(
        global_size=8,
        local_size=8,
        num_global=1,
        num_local=0,
        global_scale=(0.125, 0.125),
        aspect=(1.0, 1.0),
        **PLAIN,
    )
    np.random.seed(0)
    (view,) = t(dict(img=vol))['img']
    # an 8^3 box at some offset: values are 256 z + 16 y + x, consecutive
    z0, y0, x0 = int(view[0, 0, 0, 0]) // 256, None, None
    y0 = (int(view[0, 0, 0, 0]) % 256) // 16
    x0 = int(view[0, 0, 0, 0]) % 16
    torch.testing.assert_close(
        view, vol[:, z0 : z0 + 8, y0 : y0 + 8, x0 : x0 + 8]
    )


def test_flips_rotations_and_intensity():
    vol = _vol((1, 8, 8, 8))
    full = dict(
        global_size=8,
        num_global=1,
        num_local=0,
        global_scale=(1.0, 1.0),
        aspect=(1.0, 1.0),
    )
    flip = MultiCrop3D(
        **full, flip_prob=1.0, rot90_prob=0.0, intensity_prob=0.0
    )
    torch.testing.assert_close(
        flip(dict(img=vol))['img'][0], vol.flip(1, 2, 3)
    )
    rot = MultiCrop3D(
        **full, flip_prob=0.0, rot90_prob=1.0, intensity_prob=0.0
    )
    view = rot(dict(img=vol))['img'][0]
    rotations = [
        torch.rot90(vol, k, dims)
        for k in (1, 2, 3)
        for dims in ((1, 2), (1, 3), (2, 3))
    ]
    assert any(torch.equal(view, r) for r in rotations)
    jitter = MultiCrop3D(
        **full,
        flip_prob=0.0,
        rot90_prob=0.0,
        intensity_prob=1.0,
        intensity_scale=0.2,
        intensity_shift=0.3,
    )
    view = jitter(dict(img=vol))['img'][0]
    # view = vol * (1 + a) + b with |a| <= 0.2, |b| <= 0.3
    a = (view[0, 0, 0, 1] - view[0, 0, 0, 0]).item() - 1
    b = view[0, 0, 0, 0].item()
    assert abs(a) <= 0.2 + 1e-6 and abs(b) <= 0.3 + 1e-6
    torch.testing.assert_close(view, vol * (1 + a) + b)


def test_normalize_z_scores_each_view_and_cancels_the_jitter():
    """normalize=True: every view has mean 0 and standard deviation 1 per
    channel, and an affine intensity jitter changes nothing."""
    vol = torch.stack([_vol((1, 8, 8, 8))[0], _vol((1, 8, 8, 8))[0] ** 2])
    full = dict(
        global_size=8,
        local_size=4,
        num_global=1,
        num_local=1,
        global_scale=(1.0, 1.0),
        aspect=(1.0, 1.0),
        flip_prob=0.0,
        rot90_prob=0.0,
    )
    plain = MultiCrop3D(**full, intensity_prob=0.0, normalize=True)
    jitter = MultiCrop3D(
        **full,
        intensity_prob=1.0,
        intensity_scale=0.3,
        intensity_shift=0.2,
        normalize=True,
    )
    np.random.seed(0)
    g, loc = plain(dict(img=vol))['img']
    # the whole volume, z-scored per channel by hand
    mean = vol.mean(dim=(1, 2, 3), keepdim=True)
    std = vol.std(dim=(1, 2, 3), keepdim=True, unbiased=False)
    torch.testing.assert_close(g, (vol - mean) / std)
    for view in (g, loc):
        flat = view.flatten(1).double()
        torch.testing.assert_close(flat.mean(1), torch.zeros(2).double())
        torch.testing.assert_close(
            flat.std(1, unbiased=False), torch.ones(2).double()
        )
    np.random.seed(0)
    g_jit, _ = jitter(dict(img=vol))['img']
    torch.testing.assert_close(g_jit, g, atol=1e-5, rtol=1e-5)
    # a flat view (std 0) stays finite
    (flat_view,) = MultiCrop3D(
        **{**full, 'num_local': 0}, intensity_prob=0.0, normalize=True
    )(dict(img=torch.full((1, 8, 8, 8), 3.0)))['img']
    assert torch.equal(flat_view, torch.zeros(1, 8, 8, 8))


def test_blockwise_mask_3d_counts_and_boxes():
    np.random.seed(0)
    for target in (0, 5, 30, 64):
        mask = blockwise_mask_3d((4, 4, 4), target, min_num_patches=2)
        assert mask.shape == (4, 4, 4) and mask.dtype == bool
        assert mask.sum() <= target
        if target >= 30:
            assert mask.sum() >= target // 2
    # a single box: masked cells fill their bounding box
    np.random.seed(1)
    mask = blockwise_mask_3d((8, 8, 8), 12, min_num_patches=12)
    idx = np.argwhere(mask)
    lo, hi = idx.min(0), idx.max(0) + 1
    assert mask[lo[0] : hi[0], lo[1] : hi[1], lo[2] : hi[2]].all()


def test_mask_generator_on_multi_crop_views():
    views = [torch.zeros(1, 16, 16, 16)] * 2 + [torch.zeros(1, 8, 8, 8)] * 2
    gen = BlockwiseMaskGenerator3D(
        patch_size=4, mask_ratio=(0.5, 0.5), mask_prob=1.0, min_num_patches=2
    )
    out = gen(dict(img=views, num_global_crops=2))
    assert out['mask'].shape == (2, 4, 4, 4)
    assert all(0 < m.sum() <= 32 for m in out['mask'])
    gen.mask_prob = 0.0
    assert not gen(dict(img=views, num_global_crops=2))['mask'].any()
    with pytest.raises(ValueError, match='share one size'):
        gen(dict(img=views, num_global_crops=3))


def test_box_keeps_the_volume_share_under_aspect_jitter():
    t = MultiCrop3D(global_size=8, local_size=4, aspect=(0.5, 2.0))
    np.random.seed(0)
    shares = []
    for _ in range(20):
        start, end = t._box((32, 32, 32), (0.125, 0.125))
        sides = np.subtract(end, start)
        assert (sides >= 1).all() and (np.asarray(end) <= 32).all()
        shares.append(np.prod(sides) / 32**3)
    # the jitter changes the box's shape, not its volume (up to rounding)
    np.testing.assert_allclose(shares, 0.125, rtol=0.3)
