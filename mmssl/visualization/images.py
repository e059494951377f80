"""Reading images for the picture tools the way training reads them.

The attention / PCA maps and the MAE / SimMIM reconstructions take a file
or a whole folder. Every file is decoded with the training decoder
:class:`mmssl.datasets.transforms.LoadImageRobust` (8/16-bit, grey, RGBA,
palette, EXIF orientation; BGR uint8 out); bad files are skipped and
named. Resizing keeps the aspect ratio.
"""

import os.path as osp
from typing import Iterator, List, Optional, Tuple

import cv2
import numpy as np


def list_images(path: str) -> List[str]:
    """``[path]`` for a file, every image below a folder (sorted).

    Raises:
        FileNotFoundError: ``path`` does not exist or holds no image.
    """
    from mmssl.datasets.image_folder import scan_images

    if osp.isfile(path):
        return [path]
    if not osp.isdir(path):
        raise FileNotFoundError(f'{path} is neither a file nor a folder.')
    found = [osp.join(path, rel) for rel in scan_images(path)]
    if not found:
        raise FileNotFoundError(f'No image files below {path}.')
    return found


def read_images(
    paths: List[str], desc: str = 'images', skipped: Optional[list] = None
) -> Iterator[Tuple[str, np.ndarray]]:
    """Yield ``(path, BGR uint8 image)``; bad files are named and skipped.

    A progress bar is shown for more than one file.

    Args:
        paths (list[str]): Image files.
        desc (str): Progress bar label.
        skipped (list, optional): Receives ``(path, reason)`` of each bad
            file.
    """
    from tqdm import tqdm

    from mmssl.datasets.transforms import BadImageError, LoadImageRobust

    loader = LoadImageRobust()
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
