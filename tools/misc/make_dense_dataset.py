"""Write the bundled dense set: scenes of shapes, masks and depth maps.

Each 64x64 scene is a flat, unevenly lit ground plane with 2 to 4
objects of five shape classes (disc, square, triangle, ring, cross) in
front of it. Every object and the background take their colours from one
shared palette, independently of their class, so a pixel's colour does
not give its class away. Each class has a texture family (disc and cross:
stripes, square: checks, triangle: dots, ring: flat like the background)
whose period, angle and colours are random: the class of a pixel is the
texture and the shape of the region it belongs to (discs and crosses
share their texture, the ring its flatness with the background). Each
object stands at a random depth in metres and is drawn with a size
inversely proportional to it, the farther ones first (occlusion); the
ground's depth falls from the top of the picture to the bottom. The
layout is ADE20K's, as mmsegmentation reads it, with the depth maps
beside it::

    OUT/images/{training,validation}/<index>.jpg
    OUT/annotations/{training,validation}/<index>.png  uint8 class ids:
        0 unlabeled (ignored), 1 background, 2 disc, 3 square,
        4 triangle, 5 ring, 6 cross
    OUT/depth/{training,validation}/<index>.png  uint16 depth in mm
    OUT/classes.txt  the class names, background first
    OUT/README.md    the layout, its baselines and their commands

Every image has its own seed (``SEED``, split, index), so the set is the
same on every machine. Nothing is downloaded.

Usage:
    python tools/misc/make_dense_dataset.py data/dense [--train N --val N]
"""

import argparse
import os
import os.path as osp

import cv2
import numpy as np

CLASSES = ('background', 'disc', 'square', 'triangle', 'ring', 'cross')
SIZE = 64
SS = 4  # supersampling of the drawing
SEED = 2027
PALETTE = np.array(
    [
        (200, 60, 60),
        (60, 170, 60),
        (60, 80, 200),
        (210, 190, 60),
        (170, 70, 180),
        (60, 180, 190),
        (140, 140, 140),
    ],
    dtype=np.float32,
)
TEXTURES = ('flat', 'stripes', 'checks', 'dots')
#: The texture family of each object class (colours, period and angle
#: stay random); the background is flat, like the ring: context decides.
CLASS_TEXTURE = dict(
    disc='stripes', square='checks', triangle='dots', ring='flat',
    cross='stripes',
)  # fmt: skip
MAX_DEPTH_MM = 10000
#: Baselines of the default set (800 / 200 scenes), measured with the
#: commands of README (2-core CPU; docs/en/evaluation.md has them all).
BASELINES = (
    ('raw pixels of each 8x8 patch', '--features pixels', 14.76, 2.04),
    ('DINOv2 dense demo, random init', '', 14.68, 1.89),
    ('MAE dense demo, random init', '', 18.06, 0.89),
)
README = """# Bundled dense set

    python tools/misc/make_dense_dataset.py {out} --train {train} --val {val}

wrote 64x64 scenes of shapes on a ground plane here, in ADE20K's layout
(`images/`, `annotations/`, `depth/`: 16-bit depth maps in millimetres).
Class ids: 0 = unlabeled, 1 = background, {names}. A pixel's colour does
not give its class away: the class is the texture and the shape of its
region.

Baselines of the default set (800 training / 200 validation scenes;
another size gives other figures), frozen linear probes of
`tools/eval.py` (seg: last layer, 1000 steps, the learning rate the
best of 0.001, 0.01 and 0.1 on a held-out fifth of the training
scenes; depth: 256 bins, the same command with `--task depth`):

| features | seg/mIoU | depth/rmse (m) | command |
| --- | --- | --- | --- |
{rows}

Predicting "background" everywhere gives 14.67 mIoU: a pretrained
backbone is judged by how far above the random-init row it gets
(docs/en/evaluation.md).
"""


def _texture(rng, kind: str, n: int) -> np.ndarray:
    """A (n, n, 3) float image of one palette colour and texture."""
    colour, other = PALETTE[rng.choice(len(PALETTE), 2, replace=False)]
    img = np.empty((n, n, 3), np.float32)
    img[:] = colour
    yy, xx = np.mgrid[0:n, 0:n]
    period = rng.integers(3, 7) * SS
    if kind == 'stripes':
        angle = rng.uniform(0, np.pi)
        u = xx * np.cos(angle) + yy * np.sin(angle)
        img[(u // (period / 2)) % 2 == 1] = other
    elif kind == 'checks':
        img[((xx // period) + (yy // period)) % 2 == 1] = other
    elif kind == 'dots':
        cy, cx = (yy % period) - period / 2, (xx % period) - period / 2
        img[cy**2 + cx**2 < (period / 4) ** 2] = other
    return img


def _shape_mask(cls: str, cx, cy, r, angle, n: int) -> np.ndarray:
    """Boolean (n, n) mask of a shape of radius ``r`` (supersampled px)."""
    mask = np.zeros((n, n), np.uint8)
    c, s = np.cos(angle), np.sin(angle)

    def poly(points):
        pts = np.array(points, np.float64) * r
        rot = pts @ np.array([[c, s], [-s, c]])
        pts = (rot + (cx, cy)).round().astype(np.int32)
        cv2.fillPoly(mask, [pts], 1)

    if cls == 'disc':
        cv2.circle(mask, (int(cx), int(cy)), int(r), 1, -1)
    elif cls == 'ring':
        cv2.circle(mask, (int(cx), int(cy)), int(r), 1, -1)
        cv2.circle(mask, (int(cx), int(cy)), int(r * 0.5), 0, -1)
    elif cls == 'square':
        k = 0.8
        poly([(-k, -k), (k, -k), (k, k), (-k, k)])
    elif cls == 'triangle':
        poly([(0, -1), (0.87, 0.5), (-0.87, 0.5)])
    else:  # cross
        a, b = 1.0, 0.33
        poly([(-a, -b), (a, -b), (a, b), (-a, b)])
        poly([(-b, -a), (b, -a), (b, a), (-b, a)])
    return mask.astype(bool)


def render(seed: int):
    """``(image uint8 (64,64,3) BGR, label uint8, depth uint16 mm)``."""
    rng = np.random.default_rng(seed)
    n = SIZE * SS
    img = _texture(rng, 'flat', n)
    label = np.ones((n, n), np.uint8)  # background
    rows = np.linspace(0, 1, n, dtype=np.float32)[:, None]
    depth = np.broadcast_to(9.0 - 6.5 * rows, (n, n)).copy()  # metres
    objects = [
        (rng.uniform(1.5, 5.0), int(rng.integers(1, len(CLASSES))))
        for _ in range(rng.integers(2, 5))
    ]
    for z, cls in sorted(objects, reverse=True):  # far first
        r = (24.0 / z + rng.uniform(-1.5, 1.5)) * SS
        cx, cy = rng.uniform(0.15, 0.85, 2) * n
        mask = _shape_mask(CLASSES[cls], cx, cy, r, rng.uniform(0, 6.3), n)
        kind = CLASS_TEXTURE[CLASSES[cls]]
        img[mask] = _texture(rng, kind, n)[mask]
        label[mask] = cls + 1
        depth[mask] = z
    # lighting gradient and noise, independent of the classes
    g = rng.uniform(-0.3, 0.3, 2)
    yy, xx = np.mgrid[0:n, 0:n] / n - 0.5
    img *= (1 + g[0] * yy + g[1] * xx)[..., None]
    small = cv2.resize(img, (SIZE, SIZE), interpolation=cv2.INTER_AREA)
    small += rng.normal(0, 6, small.shape)
    image = np.clip(small, 0, 255).astype(np.uint8)[..., ::-1]
    label = label[SS // 2 :: SS, SS // 2 :: SS]
    depth = depth[SS // 2 :: SS, SS // 2 :: SS]
    depth_mm = np.clip(depth * 1000, 1, MAX_DEPTH_MM).astype(np.uint16)
    return np.ascontiguousarray(image), label, depth_mm


def readme(out: str, n_train: int, n_val: int) -> str:
    """The set's README: layout, baselines and the command of each."""
    configs = dict(
        DINOv2='configs/dinov2/dinov2_vit-tiny-p8_1xb64-40e_dense_demo.py',
        MAE='configs/mae/mae_vit-tiny-p8_1xb64-40e_dense_demo.py',
    )
    rows = []
    for name, flag, miou, rmse in BASELINES:
        cfg = configs['MAE' if name.startswith('MAE') else 'DINOv2']
        cmd = f'python tools/eval.py {cfg} --task seg --data {out}'
        rows.append(
            f'| {name} | {miou:.2f} | {rmse:.2f} | `{cmd}'
            f'{" " + flag if flag else ""}` |'
        )
    return README.format(
        out=out,
        train=n_train,
        val=n_val,
        names=', '.join(f'{i + 2} = {c}' for i, c in enumerate(CLASSES[1:])),
        rows='\n'.join(rows),
    )


def write(out: str, n_train: int, n_val: int) -> None:
    """Write both splits under ``out``, and ``classes.txt`` (the class
    names in id order after reduce_zero_label, read by tools/eval.py)."""
    os.makedirs(out, exist_ok=True)
    with open(osp.join(out, 'classes.txt'), 'w') as f:
        f.write('\n'.join(CLASSES) + '\n')
    with open(osp.join(out, 'README.md'), 'w') as f:
        f.write(readme(out, n_train, n_val))
    for split, count, offset in (
        ('training', n_train, 0),
        ('validation', n_val, 1_000_000),
    ):
        for sub in ('images', 'annotations', 'depth'):
            os.makedirs(osp.join(out, sub, split), exist_ok=True)
        for i in range(count):
            image, label, depth = render(SEED * 10_000_000 + offset + i)
            name = f'{i:05d}'
            cv2.imwrite(
                osp.join(out, 'images', split, name + '.jpg'),
                image,
                [cv2.IMWRITE_JPEG_QUALITY, 95],
            )
            cv2.imwrite(
                osp.join(out, 'annotations', split, name + '.png'), label
            )
            cv2.imwrite(osp.join(out, 'depth', split, name + '.png'), depth)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('out', help='output folder, e.g. data/dense')
    parser.add_argument('--train', type=int, default=800)
    parser.add_argument('--val', type=int, default=200)
    args = parser.parse_args(argv)
    write(args.out, args.train, args.val)
    print(
        f'wrote {args.train} training and {args.val} validation scenes '
        f'({SIZE}x{SIZE}, {len(CLASSES)} classes + unlabeled 0, depth in '
        f'mm) to {args.out}'
    )


if __name__ == '__main__':
    main()
