"""Image / label pairs of the dense probes, in the usual folder layouts.

Segmentation (``layout``):

* ``ade20k`` (mmsegmentation's ADE20K layout, also the bundled
  ``data/dense``): ``images/{training,validation}/X.jpg`` and
  ``annotations/{training,validation}/X.png``, uint8 class ids, 0 =
  unlabeled: ignored, and the ids shifted down by one
  (``reduce_zero_label``), so 150 classes are ids 1..150.
* ``voc``: ``JPEGImages/X.jpg``, ``SegmentationClass/X.png`` (palette
  PNG of class ids, 255 = ignored border),
  ``ImageSets/Segmentation/{train,val}.txt``; 21 classes.
* ``cityscapes``: ``leftImg8bit/{train,val}/<city>/X_leftImg8bit.png`` and
  ``gtFine/{train,val}/<city>/X_gtFine_labelTrainIds.png`` (made by
  cityscapesscripts' ``createTrainIdLabelImgs``), 19 classes, 255 ignored.

Depth (``layout``):

* ``folder`` (the bundled ``data/dense``): ``images/{training,
  validation}/X.jpg`` and ``depth/{training,validation}/X.png``;
* ``nyu`` (the BTS/DINOv2 NYUv2 layout): ``sync/<scene>/rgb_N.jpg`` with
  ``sync_depth_N.png`` (train) and ``official_splits/test/<scene>/...``
  (validation).

Depth PNGs are 16-bit, millimetres; 0 is "no measurement" (ignored).
"""

import glob
import os.path as osp
from typing import List, Optional, Tuple

import cv2
import numpy as np

IGNORE_INDEX = 255
SEG_LAYOUTS = ('ade20k', 'voc', 'cityscapes')
DEPTH_LAYOUTS = ('folder', 'nyu')
_SPLITS = {
    'ade20k': {'train': 'training', 'val': 'validation'},
    'folder': {'train': 'training', 'val': 'validation'},
    'cityscapes': {'train': 'train', 'val': 'val'},
    'voc': {'train': 'train', 'val': 'val'},
    'nyu': {'train': 'sync', 'val': osp.join('official_splits', 'test')},
}


def _stem(path: str) -> str:
    return osp.splitext(osp.basename(path))[0]


def _image_folder_pairs(root: str, sub: str, labels: str) -> Tuple:
    """``images/<sub>/*.{jpg,png}`` paired with ``<labels>/<sub>/<stem>.png``
    (the ADE20K layout, and the depth folder layout), and the images
    folder for error messages."""
    where = osp.join(root, 'images', sub)
    images = sorted(glob.glob(osp.join(where, '*.jpg')))
    images += sorted(glob.glob(osp.join(where, '*.png')))
    pairs = [
        (p, osp.join(root, labels, sub, _stem(p) + '.png')) for p in images
    ]
    return pairs, where


def seg_pairs(root: str, split: str, layout: str = 'ade20k') -> List[Tuple]:
    """``[(image, mask)]`` paths of a split (``'train'`` / ``'val'``).

    Raises:
        FileNotFoundError: No pair (names the folders looked at), or an
            image without its mask.
    """
    if layout not in SEG_LAYOUTS:
        raise ValueError(f'unknown layout {layout!r}; one of {SEG_LAYOUTS}')
    sub = _SPLITS[layout][split]
    if layout == 'ade20k':
        pairs, where = _image_folder_pairs(root, sub, 'annotations')
    elif layout == 'voc':
        listing = osp.join(root, 'ImageSets', 'Segmentation', sub + '.txt')
        names = open(listing).read().split() if osp.isfile(listing) else []
        pairs = [
            (
                osp.join(root, 'JPEGImages', n + '.jpg'),
                osp.join(root, 'SegmentationClass', n + '.png'),
            )
            for n in names
        ]
        where = listing
    else:
        pattern = osp.join(root, 'leftImg8bit', sub, '*', '*_leftImg8bit.png')
        pairs = [
            (
                p,
                p.replace('leftImg8bit', 'gtFine', 1).replace(
                    '_leftImg8bit.png', '_gtFine_labelTrainIds.png'
                ),
            )
            for p in sorted(glob.glob(pattern))
        ]
        where = osp.join(root, 'leftImg8bit', sub)
    return _checked(pairs, where, split, layout)


def depth_pairs(root: str, split: str, layout: str = 'folder') -> List:
    """``[(image, depth png)]`` paths of a split; see the module doc."""
    if layout not in DEPTH_LAYOUTS:
        raise ValueError(f'unknown layout {layout!r}; one of {DEPTH_LAYOUTS}')
    sub = _SPLITS[layout][split]
    if layout == 'folder':
        pairs, where = _image_folder_pairs(root, sub, 'depth')
    else:
        where = osp.join(root, sub)
        images = sorted(
            glob.glob(osp.join(where, '**', 'rgb_*.jpg'), recursive=True)
        )
        pairs = [
            (
                p,
                osp.join(
                    osp.dirname(p),
                    'sync_depth_' + _stem(p)[len('rgb_') :] + '.png',
                ),
            )
            for p in images
        ]
    return _checked(pairs, where, split, layout)


def _checked(pairs, where, split, layout) -> List[Tuple]:
    if not pairs:
        raise FileNotFoundError(
            f'the {split} split is empty: no image in {where} (layout '
            f'{layout!r}); check --data and the layout (docs/en/'
            'evaluation.md).'
        )
    for image, label in pairs:
        if not osp.isfile(label):
            raise FileNotFoundError(
                f'{image} has no label file {label}; every image of the '
                'split needs one (or remove the image).'
            )
    return pairs


def read_image(path: str) -> np.ndarray:
    """uint8 (H, W, 3), BGR as cv2 reads (grey is repeated)."""
    img = cv2.imread(path, cv2.IMREAD_COLOR)
    if img is None:
        raise OSError(f'cannot read image {path}; remove or replace it.')
    return img


def read_mask(
    path: str,
    image_shape: tuple,
    num_classes: int,
    reduce_zero_label: bool,
) -> np.ndarray:
    """int64 (H, W) class ids, ``IGNORE_INDEX`` where ignored.

    Raises:
        ValueError: Size other than the image's, or ids above the class
            count (both name the file and the fix).
    """
    from PIL import Image

    mask = np.array(Image.open(path))  # palette PNGs give their indices
    if mask.ndim != 2:
        raise ValueError(
            f'{path} has {mask.shape[2]} channels: a mask is one channel '
            'of class ids (a palette or grey PNG), not a colour picture.'
        )
    if mask.shape != tuple(image_shape[:2]):
        raise ValueError(
            f'{path} is {mask.shape[1]}x{mask.shape[0]} but its image is '
            f'{image_shape[1]}x{image_shape[0]}; masks must have the size '
            'of their image (resize with nearest neighbour).'
        )
    mask = mask.astype(np.int64)
    if reduce_zero_label:
        # 0 (unlabeled) and 255 (ignored) -> ignored, the rest down by 1
        mask = mask - 1
        mask[(mask == -1) | (mask == IGNORE_INDEX - 1)] = IGNORE_INDEX
    valid = mask[mask != IGNORE_INDEX]
    if valid.size and valid.max() >= num_classes:
        shift = ' after reduce_zero_label' if reduce_zero_label else ''
        raise ValueError(
            f'{path} has class id {int(valid.max())}{shift}, but '
            f'num_classes={num_classes}; pass --num-classes '
            f'{int(valid.max()) + 1} (or fix the mask).'
        )
    return mask


def read_depth(
    path: str, image_shape: tuple, scale: float = 1000.0
) -> np.ndarray:
    """float32 (H, W) metres (0 = no measurement) from a 16-bit PNG."""
    depth = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    if depth is None:
        raise OSError(f'cannot read depth map {path}.')
    if depth.ndim != 2 or depth.dtype != np.uint16:
        raise ValueError(
            f'{path} is {depth.dtype} with shape {depth.shape}: a depth '
            'map is a one-channel 16-bit PNG in millimetres.'
        )
    if depth.shape != tuple(image_shape[:2]):
        raise ValueError(
            f'{path} is {depth.shape[1]}x{depth.shape[0]} but its image '
            f'is {image_shape[1]}x{image_shape[0]}; depth maps must have '
            'the size of their image.'
        )
    return depth.astype(np.float32) / scale


def limit(pairs: List, count: Optional[int]) -> List:
    """The first ``count`` pairs (all when None)."""
    return pairs if not count else pairs[:count]
