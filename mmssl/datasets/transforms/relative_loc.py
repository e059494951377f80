"""Patch grid for Relative Location (Doersch et al., ICCV 2015)."""

import numpy as np
from mmcv.transforms import BaseTransform

from mmssl.registry import TRANSFORMS


@TRANSFORMS.register_module()
class RelativeLocPatches(BaseTransform):
    """Cut an image into a 3x3 grid of randomly jittered patches.

    "Unsupervised Visual Representation Learning by Context Prediction",
    https://arxiv.org/abs/1505.05192. Each grid cell is ``H // 3`` by
    ``W // 3`` pixels; a ``patch_size`` square is cropped from it at a random
    offset, so neighbouring patches are separated by a gap of random width
    and the network cannot solve the task by matching edges.

    Required keys: ``img`` (H, W, C). Modified keys: ``img`` becomes a list
    of 9 arrays (patch_size, patch_size, C) in row-major grid order, the
    centre patch at index 4; ``img_shape``.

    Args:
        patch_size (int): Side of each patch; at most ``min(H, W) // 3``.
    """

    def __init__(self, patch_size: int) -> None:
        super().__init__()
        self.patch_size = patch_size

    def transform(self, results: dict) -> dict:
        img = results['img']
        height, width = img.shape[:2]
        cell_h, cell_w = height // 3, width // 3
        if self.patch_size > min(cell_h, cell_w):
            raise ValueError(
                f'RelativeLocPatches: patch_size={self.patch_size} does not '
                f'fit a 3x3 grid of a {height}x{width} image (cells of '
                f'{cell_h}x{cell_w}); resize the image to at least '
                f'{3 * self.patch_size} px first.'
            )
        patches = []
        for row in range(3):
            for col in range(3):
                top = row * cell_h + np.random.randint(
                    cell_h - self.patch_size + 1
                )
                left = col * cell_w + np.random.randint(
                    cell_w - self.patch_size + 1
                )
                patches.append(
                    np.ascontiguousarray(
                        img[
                            top : top + self.patch_size,
                            left : left + self.patch_size,
                        ]
                    )
                )
        results['img'] = patches
        results['img_shape'] = (self.patch_size, self.patch_size)
        return results

    def __repr__(self) -> str:
        return f'{self.__class__.__name__}(patch_size={self.patch_size})'
