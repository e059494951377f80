"""Generate a small folder with images of every kind, plus bad files."""

import os
import os.path as osp

import cv2
import numpy as np
from PIL import Image

#: name -> expected reason substring for the bad files written below.
BAD = {
    'bad/zero.jpg': 'zero-byte',
    'bad/truncated.jpg': 'truncated',
    'bad/text.JPG': 'not a readable image',
}


def make_messy_folder(root: str) -> dict:
    """Write every kind of file under ``root``; return name -> kind."""
    rng = np.random.RandomState(0)
    os.makedirs(osp.join(root, 'a', 'nested', 'deeper'), exist_ok=True)
    os.makedirs(osp.join(root, 'b'), exist_ok=True)
    os.makedirs(osp.join(root, 'bad'), exist_ok=True)
    rgb = rng.randint(0, 256, (24, 40, 3)).astype(np.uint8)
    files = {}

    def put(rel, kind):
        files[rel] = kind
        return osp.join(root, rel)

    cv2.imwrite(put('a/rgb8.png', 'rgb8'), rgb)
    g16 = (np.arange(24 * 40).reshape(24, 40) * 60).astype(np.uint16)
    cv2.imwrite(put('a/gray16.png', 'gray16'), g16)
    cv2.imwrite(put('a/nested/gray16.TIF', 'gray16'), g16)
    c16 = rgb.astype(np.uint16) * 257
    cv2.imwrite(put('a/nested/rgb16.tiff', 'rgb16'), c16)
    cv2.imwrite(put('a/nested/deeper/gray8.PNG', 'gray8'), rgb[..., 0])
    Image.fromarray(
        np.dstack([rgb[..., ::-1], np.full((24, 40), 128, np.uint8)]), 'RGBA'
    ).save(put('b/rgba.png', 'rgba'))
    Image.fromarray(rgb[..., ::-1]).convert('P').save(
        put('b/palette.png', 'palette')
    )
    im = Image.fromarray(rgb[..., ::-1])
    exif = im.getexif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise on display
    im.save(put('b/exif_rot.JPEG', 'exif'), exif=exif, quality=95)
    cv2.imwrite(put('b/plain.bmp', 'bmp'), rgb)
    cv2.imwrite(put('b/plain.webp', 'webp'), rgb)
    cv2.imwrite(put('root_level.jpg', 'jpg'), rgb)
    open(put('bad/zero.jpg', 'bad'), 'wb').close()
    data = cv2.imencode(
        '.jpg', rng.randint(0, 256, (64, 64, 3)).astype(np.uint8)
    )[1].tobytes()
    with open(put('bad/truncated.jpg', 'bad'), 'wb') as f:
        f.write(data[: len(data) // 2])
    with open(put('bad/text.JPG', 'bad'), 'w') as f:
        f.write('this is not an image\n')
    with open(osp.join(root, 'a', 'notes.txt'), 'w') as f:
        f.write('ignored: not an image extension\n')
    return files
