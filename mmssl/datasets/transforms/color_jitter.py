"""mmpretrain's ColorJitter with a hue shift that works under numpy 2.

mmcv 2.2's ``adjust_hue`` adds ``np.uint8(hue_factor * 255)`` to the hue
channel. For a negative factor numpy >= 2 raises ``OverflowError: Python
integer -42 out of bounds for uint8`` instead of wrapping around, so every
recipe that jitters hue (SimCLR, MoCo v2/v3, BYOL, SimSiam, Barlow Twins,
DenseCL, SwAV) stopped at its first image. :class:`HueSafeColorJitter`
draws the same parameters in the same order as mmpretrain's
``ColorJitter`` and shifts the hue modulo 256, which is what the uint8
addition did under numpy 1.
"""

from typing import Dict

import cv2
import mmcv
import numpy as np
from mmpretrain.datasets.transforms import ColorJitter
from PIL import Image

from mmssl.registry import TRANSFORMS

from .rgb_only import refuse_non_rgb


def _hue_shift(hue_factor: float) -> int:
    """The hue step in uint8 units, truncated toward zero like a C cast."""
    return int(hue_factor * 255) % 256


def adjust_hue(img: np.ndarray, hue_factor: float, backend: str = 'cv2'):
    """Rotate the hue of a BGR image by ``hue_factor`` turns.

    Args:
        img (np.ndarray): BGR image (H, W, 3).
        hue_factor (float): Shift in [-0.5, 0.5] of a full turn.
        backend (str): ``'cv2'`` (full-range 8-bit HSV) or ``'pillow'``
            (PIL's HSV), as in mmcv. Defaults to ``'cv2'``.

    Returns:
        np.ndarray: The shifted image, same dtype as ``img``.
    """
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f'hue_factor {hue_factor} is not in [-0.5, 0.5]')
    if backend not in ('cv2', 'pillow'):
        raise ValueError(
            f"backend {backend!r} is not supported; use 'cv2' or 'pillow'"
        )
    if img.ndim != 3 or img.shape[2] != 3:
        return img  # grey images have no hue
    shift = np.uint8(_hue_shift(hue_factor))
    if backend == 'pillow':
        hsv = np.array(Image.fromarray(img[..., ::-1], 'RGB').convert('HSV'))
        hsv[..., 0] += shift  # uint8 array + uint8 scalar wraps around
        rgb = np.array(Image.fromarray(hsv, 'HSV').convert('RGB'))
        return rgb[..., ::-1].astype(img.dtype)
    hsv = cv2.cvtColor(img.astype(np.uint8), cv2.COLOR_BGR2HSV_FULL)
    hsv[..., 0] += shift
    return cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR_FULL).astype(img.dtype)


@TRANSFORMS.register_module()
class HueSafeColorJitter(ColorJitter):
    """``ColorJitter`` (same arguments and draws) that runs under numpy 2.

    Use it wherever a config has ``dict(type='ColorJitter', hue=...)`` with
    ``hue > 0``; with ``hue=0`` both are the same.
    """

    def transform(self, results: Dict) -> Dict:
        """Apply the jitters in a random order.

        Args:
            results (dict): Needs ``img`` (BGR uint8).

        Returns:
            dict: ``results`` with ``img`` jittered.

        Raises:
            ValueError: ``img`` has channels other than 1 or 3 (use
                ``ChannelIntensityJitter`` on multi-channel images).
        """
        img = results['img']
        refuse_non_rgb(type(self).__name__, img)
        order, brightness, contrast, saturation, hue = self._rand_params()
        for index in order:
            if index == 0 and brightness is not None:
                img = mmcv.adjust_brightness(
                    img, brightness, backend=self.backend
                )
            elif index == 1 and contrast is not None:
                img = mmcv.adjust_contrast(img, contrast, backend=self.backend)
            elif index == 2 and saturation is not None:
                img = mmcv.adjust_color(
                    img, alpha=saturation, backend=self.backend
                )
            elif index == 3 and hue is not None:
                img = adjust_hue(img, hue, backend=self.backend)
        results['img'] = img
        return results
