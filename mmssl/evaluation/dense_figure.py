"""The picture of a dense probe: image | ground truth | prediction rows."""

from typing import List, Tuple

import cv2
import numpy as np

from .dense_data import IGNORE_INDEX

#: Height of the band with the title and the column headings.
HEADER_HEIGHT = 44
#: White pixels between the columns.
GAP = 6


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
    title: str = '',
) -> np.ndarray:
    """A header band (``title``; column headings image, ground truth,
    prediction), then one row per sample (BGR uint8).

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
        gap = np.full((cell, GAP, 3), 255, np.uint8)  # columns apart
        rows.append(np.concatenate([row[0], gap, row[1], gap, row[2]], 1))
    width = max(r.shape[1] for r in rows)
    rows = [np.pad(r, ((0, 2), (0, width - r.shape[1]), (0, 0))) for r in rows]
    heading = header_band(
        width, title, ['image', 'ground truth', 'prediction'], rows[0], cell
    )
    return np.concatenate([heading] + rows, 0)


def _text(img: np.ndarray, text: str, x: int, y: int) -> None:
    cv2.putText(
        img, text, (x, y), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 1,
        cv2.LINE_AA,
    )  # fmt: skip


def header_band(
    width: int, title: str, columns: List[str], row: np.ndarray, cell: int
) -> np.ndarray:
    """A white band of :data:`HEADER_HEIGHT` pixels: the title, then each
    column's heading over its first pixel (cells of ``row`` are
    ``cell`` high and equally wide)."""
    band = np.full((HEADER_HEIGHT, width, 3), 255, np.uint8)
    _text(band, title[: max(1, width // 8)], 4, 16)
    step = (row.shape[1] + GAP) // max(1, len(columns))
    for i, name in enumerate(columns):
        _text(band, name, 4 + i * step, 36)
    return band
