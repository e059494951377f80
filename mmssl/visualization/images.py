"""Reading images for the picture tools the way training reads them.

The attention / PCA maps and the MAE / SimMIM reconstructions take a file
or a whole folder. Every file is decoded with the training decoder
:class:`mmssl.datasets.transforms.LoadImageRobust` (8/16-bit, grey, RGBA,
palette, EXIF orientation; BGR uint8 out), or with the config's
multi-channel loader (``LoadMultiChannelTiff``); bad files are skipped
and named. Resizing keeps the aspect ratio. :func:`channels_to_rgb` draws
a multi-channel image as RGB.
"""

import os.path as osp
from typing import Iterator, List, Optional, Sequence, Tuple

import cv2
import numpy as np


def list_images(path: str) -> List[str]:
    """``[path]`` for a file, every image below a folder (sorted).

    Raises:
        FileNotFoundError: ``path`` does not exist or holds no image.
    """
    from mmssl.datasets.image_index import scan_images

    if osp.isfile(path):
        return [path]
    if not osp.isdir(path):
        raise FileNotFoundError(f'{path} is neither a file nor a folder.')
    found = [osp.join(path, rel) for rel in scan_images(path)]
    if not found:
        raise FileNotFoundError(f'No image files below {path}.')
    return found


def read_images(
    paths: List[str],
    desc: str = 'images',
    skipped: Optional[list] = None,
    loader: Optional[dict] = None,
) -> Iterator[Tuple[str, np.ndarray]]:
    """Yield ``(path, image)``; bad files are named and skipped.

    A progress bar is shown for more than one file.

    Args:
        paths (list[str]): Image files.
        desc (str): Progress bar label.
        skipped (list, optional): Receives ``(path, reason)`` of each bad
            file.
        loader (dict, optional): The loading transform of the training
            pipeline, e.g. a config's ``LoadMultiChannelTiff``
            (:func:`mmssl.evaluation.folders.config_loader`); its
            (H, W, C) float32 output is yielded as is. Default:
            ``LoadImageRobust`` (BGR uint8).
    """
    from tqdm import tqdm

    from mmssl.datasets.transforms import BadImageError, LoadImageRobust
    from mmssl.registry import TRANSFORMS

    loader = TRANSFORMS.build(loader) if loader else LoadImageRobust()
    for path in tqdm(paths, desc=desc, disable=len(paths) < 2, leave=False):
        try:
            img = loader(dict(img_path=path))['img']
        except BadImageError as err:
            print(f'skipped bad file {path}: {err.reason}', flush=True)
            if skipped is not None:
                skipped.append((path, err.reason))
            continue
        yield path, img


def resize_keep_aspect(
    img: np.ndarray, short_side: int, multiple: int = 1, max_ratio: float = 4
) -> np.ndarray:
    """Resize so the short side is about ``short_side``, aspect kept.

    Both sides are rounded to multiples of ``multiple`` (the patch size),
    and the long side is capped at ``max_ratio * short_side`` (very long
    strips then get a shorter short side instead of being squashed).

    Returns:
        np.ndarray: The resized image, (H', W'[, C]).
    """
    h, w = img.shape[:2]
    scale = short_side / min(h, w)
    scale = min(scale, max_ratio * short_side / max(h, w))
    new_h = max(multiple, round(h * scale / multiple) * multiple)
    new_w = max(multiple, round(w * scale / multiple) * multiple)
    return cv2.resize(img, (new_w, new_h), interpolation=cv2.INTER_CUBIC)


def center_crop_square(img: np.ndarray, size: int) -> np.ndarray:
    """Resize the short side to ``size`` (aspect kept), crop the centre."""
    h, w = img.shape[:2]
    scale = size / min(h, w)
    new_h, new_w = max(size, round(h * scale)), max(size, round(w * scale))
    img = cv2.resize(img, (new_w, new_h), interpolation=cv2.INTER_CUBIC)
    top, left = (new_h - size) // 2, (new_w - size) // 2
    return img[top : top + size, left : left + size]


def overlay(rgb: np.ndarray, heat: np.ndarray, alpha: float = 0.5):
    """Blend a heat map (or PCA colours) over an image, both HxWx3 uint8."""
    if heat.shape[:2] != rgb.shape[:2]:
        heat = cv2.resize(
            heat, rgb.shape[1::-1], interpolation=cv2.INTER_NEAREST
        )
    mixed = (1 - alpha) * rgb.astype(np.float32) + alpha * heat
    return mixed.clip(0, 255).astype(np.uint8)


def output_stem(path: str, root: str) -> str:
    """A file name for ``path``'s outputs, unique below ``root``."""
    rel = osp.relpath(path, root) if osp.isdir(root) else osp.basename(path)
    return osp.splitext(rel)[0].replace(osp.sep, '__')


#: Display colours (RGB) of channels 0, 1, 2, ... in a multi-channel
#: composite: blue first (channel 0 is often the nuclear stain, DAPI or
#: Hoechst), then green, red, magenta, cyan, yellow; repeated after six.
CHANNEL_COLORS = np.array(
    [[0, 0, 1], [0, 1, 0], [1, 0, 0], [1, 0, 1], [0, 1, 1], [1, 1, 0]],
    np.float32,
)


def channels_to_rgb(
    img: np.ndarray, rgb_channels: Optional[Sequence[int]] = None
) -> np.ndarray:
    """An RGB picture of an (H, W, C) image with any channel count.

    Each channel is scaled to [0, 1] by its own 0.5 and 99.5 percentiles
    (so 16-bit raw and percentile-scaled inputs look alike). By default
    every channel is drawn in its :data:`CHANNEL_COLORS` colour and the
    colours are added and clipped, as in ImageJ's composite view.
    ``rgb_channels=(r, g, b)`` shows just those three channels as red,
    green and blue instead (-1: that colour stays black).

    Returns:
        np.ndarray: (H, W, 3) uint8, RGB order.
    """
    x = np.asarray(img, np.float32)
    x = x[..., None] if x.ndim == 2 else x
    c = x.shape[2]
    lo = np.percentile(x, 0.5, axis=(0, 1))
    hi = np.percentile(x, 99.5, axis=(0, 1))
    x = np.clip((x - lo) / np.where(hi > lo, hi - lo, 1.0), 0.0, 1.0)
    if rgb_channels is None:
        colors = CHANNEL_COLORS[np.arange(c) % len(CHANNEL_COLORS)]
        if c == 1:
            colors = np.ones((1, 3), np.float32)
        rgb = x @ colors  # (H, W, 3)
    else:
        if len(rgb_channels) != 3 or max(rgb_channels) >= c:
            raise ValueError(
                f'rgb_channels must be 3 channel indices below {c} (-1 for '
                f'black), got {list(rgb_channels)}.'
            )
        zero = np.zeros(x.shape[:2], np.float32)
        rgb = np.stack(
            [x[..., i] if i >= 0 else zero for i in rgb_channels], -1
        )
    return (np.clip(rgb, 0.0, 1.0) * 255 + 0.5).astype(np.uint8)
