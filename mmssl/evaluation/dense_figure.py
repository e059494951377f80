"""The picture of a dense probe: image | ground truth | prediction rows."""

from typing import List, Tuple

import cv2
import numpy as np

from .dense_data import IGNORE_INDEX


def class_colours(num_classes: int) -> np.ndarray:
    """(K + 1, 3) uint8 BGR colours; the last one (black) is ignored."""
    rng = np.random.default_rng(0)
    colours = rng.integers(40, 256, (num_classes, 3)).astype(np.uint8)
    return np.concatenate([colours, np.zeros((1, 3), np.uint8)])


def colour_mask(mask: np.ndarray, num_classes: int) -> np.ndarray:
    """Class ids (H, W) -> BGR picture; ignored pixels black."""
    ids = np.where(mask == IGNORE_INDEX, num_classes, mask)
    ids = np.clip(ids, 0, num_classes)
    return class_colours(num_classes)[ids]


def colour_depth(depth: np.ndarray, max_depth: float) -> np.ndarray:
    """Depth (H, W) metres -> BGR (near bright); no measurement black."""
    scaled = np.clip(255 * (1 - depth / max_depth), 0, 255).astype(np.uint8)
    out = cv2.applyColorMap(scaled, cv2.COLORMAP_MAGMA)
    out[depth <= 0] = 0
    return out


def grid_picture(
    samples: List[Tuple[np.ndarray, np.ndarray, np.ndarray]],
    kind: str,
    num_classes: int = 0,
    max_depth: float = 10.0,
    cell: int = 128,
) -> np.ndarray:
    """One row per sample: image, ground truth, prediction (BGR uint8).

    Args:
        samples: ``(image BGR, target, prediction)``; targets are class
            ids (``kind='seg'``) or depth in metres (``kind='depth'``).
        cell (int): Height of a cell in pixels (nearest upscaling).
    """
    rows = []
    for image, target, pred in samples:
        if kind == 'seg':
            cells = [colour_mask(target, num_classes)]
            cells.append(colour_mask(pred, num_classes))
        else:
            cells = [colour_depth(target, max_depth)]
            cells.append(colour_depth(pred, max_depth))
        h, w = target.shape
        width = max(1, round(cell * w / h))
        row = [
            cv2.resize(c, (width, cell), interpolation=cv2.INTER_NEAREST)
            for c in [cv2.resize(image, (w, h))] + cells
        ]
        rows.append(np.concatenate(row, 1))
    width = max(r.shape[1] for r in rows)
    rows = [np.pad(r, ((0, 2), (0, width - r.shape[1]), (0, 0))) for r in rows]
    return np.concatenate(rows, 0)
