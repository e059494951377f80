"""Properties of the random-resized-crop boxes of ``MultiCrop``.

A box (top, left, crop_h, crop_w) is either a sampled one, the rounding
of a real box whose area share lies in the configured ``scale`` range and
whose aspect (w / h) lies in ``ratio`` (so each side is within 0.5 px of
it), or the documented fallback after ten failed draws: the largest
centred box whose aspect is in ``ratio`` (the whole image when its own
aspect is), whatever its area, with sides of at least 1 px. Always
inside the image. Image sizes
include very thin ones (1 px high or wide).
"""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from mmssl.datasets.transforms import MultiCrop

SIDES = st.integers(1, 4096)
THIN = st.tuples(st.integers(1, 3), st.integers(200, 6000))


@st.composite
def image_sizes(draw):
    """(h, w): any size, or a thin strip lying or standing."""
    if draw(st.booleans()):
        return draw(SIDES), draw(SIDES)
    short, long = draw(THIN)
    return (short, long) if draw(st.booleans()) else (long, short)


@st.composite
def ranges(draw, low, high):
    """(lo, hi) with low <= lo <= hi <= high, often equal or wide."""
    a = draw(st.floats(low, high))
    b = draw(st.floats(low, high) | st.just(a))
    return min(a, b), max(a, b)


def _within(lo, hi, value_lo, value_hi):
    """Some value in [value_lo, value_hi] lies in [lo, hi]."""
    return value_lo <= hi * (1 + 1e-9) and value_hi >= lo * (1 - 1e-9)


def _sampled_ok(h, w, box, scale, ratio):
    _, _, ch, cw = box
    area = h * w
    # each side is within 0.5 px of a real box that meets both ranges
    area_ok = _within(
        scale[0] * area,
        scale[1] * area,
        (cw - 0.5) * (ch - 0.5),
        (cw + 0.5) * (ch + 0.5),
    )
    aspect_ok = _within(
        ratio[0], ratio[1], (cw - 0.5) / (ch + 0.5), (cw + 0.5) / (ch - 0.5)
    )
    return area_ok and aspect_ok


def _fallback_ok(h, w, box, ratio):
    top, left, ch, cw = box
    centred = top == (h - ch) // 2 and left == (w - cw) // 2
    if ratio[0] <= w / h <= ratio[1]:
        return centred and (ch, cw) == (h, w)
    if not centred:
        return False
    # the largest box: one side is the image's; the other is rounded, to
    # at least 1 px (a 1-px side may stand for any real side below 1.5)
    exact_sides = [e for e, ok in ((True, ch == h), (False, cw == w)) if ok]
    for h_is_exact in exact_sides:
        h_lo, h_hi = (ch, ch) if h_is_exact else _rounded(ch)
        w_lo, w_hi = _rounded(cw) if h_is_exact else (cw, cw)
        most = w_hi / h_lo if h_lo else float('inf')
        if _within(ratio[0], ratio[1], w_lo / h_hi, most):
            return True
    return False


def _rounded(side):
    """Real sides that give ``side`` px after rounding and the 1-px floor."""
    return (0.0 if side == 1 else side - 0.5), side + 0.5


@given(
    size=image_sizes(),
    scale=ranges(0.01, 1.0),
    ratio=ranges(0.2, 5.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_crop_boxes(size, scale, ratio, seed):
    h, w = size
    mc = MultiCrop(global_scale=scale, ratio=ratio, num_local_crops=0)
    np.random.seed(seed)
    for _ in range(20):
        box = mc._crop_box(h, w, mc.global_scale)
        top, left, ch, cw = box
        assert ch >= 1 and cw >= 1
        assert 0 <= top and top + ch <= h, (box, size)
        assert 0 <= left and left + cw <= w, (box, size)
        assert _sampled_ok(h, w, box, scale, ratio) or _fallback_ok(
            h, w, box, ratio
        ), (box, size, scale, ratio)


@given(size=st.tuples(st.integers(1, 64), st.integers(1, 64)))
def test_views_of_any_image(size):
    """Every view has its configured size, even from a 1-px strip."""
    mc = MultiCrop(global_size=(8, 12), local_size=4, num_local_crops=2)
    img = np.random.randint(0, 256, size, dtype=np.uint8)
    views = mc.transform(dict(img=img))['img']
    assert [v.shape for v in views] == [(8, 12, 3)] * 2 + [(4, 4, 3)] * 2
    assert all(v.dtype == np.uint8 for v in views)
