"""DINO-family multi-crop for images with any number of channels.

References:
    - Caron et al. 2021, "Emerging Properties in Self-Supervised Vision
      Transformers" (DINO), https://arxiv.org/abs/2104.14294
    - Oquab et al. 2023, "DINOv2: Learning Robust Visual Features without
      Supervision", https://arxiv.org/abs/2304.07193
"""

from typing import Optional, Sequence

import cv2
import numpy as np
from mmcv.transforms import BaseTransform

from mmssl.registry import TRANSFORMS

from .channel_jitter import ChannelIntensityJitter
from .crop_args import ProbType, SizeType, size_pair, value_range, view_probs
from .multi_crop import MultiCrop

#: DINO's colour jitter probability with channel-aware strengths.
DEFAULT_JITTER = dict(brightness=0.4, contrast=0.4, gamma=0.2, prob=0.8)

#: MultiCrop arguments that are RGB operations -> why they do not apply.
_RGB_ARGS = {
    'color_jitter': 'hue and saturation are defined on RGB only',
    'color_jitter_prob': 'there is no RGB colour jitter to apply',
    'grayscale_prob': 'grayscale mixes channels with RGB luma weights',
    'global_solarize_prob': 'solarization inverts 8-bit RGB values >= 128',
    'local_solarize_prob': 'solarization inverts 8-bit RGB values >= 128',
    'solarize_threshold': 'solarization inverts 8-bit RGB values >= 128',
    'channel_order': 'there is no BGR/RGB order for C channels',
}


def _refuse_rgb_args(kwargs: dict) -> None:
    for name in kwargs:
        if name in _RGB_ARGS:
            raise ValueError(
                f'MultiChannelMultiCrop has no {name!r}: {_RGB_ARGS[name]}. '
                'Set the per-channel intensity jitter instead, e.g. '
                'jitter=dict(brightness=0.4, contrast=0.4, gamma=0.2, '
                'drop_prob=0.1, prob=0.8) (ChannelIntensityJitter), and '
                'leave colour jitter, grayscale and solarization out.'
            )
    if kwargs:
        raise TypeError(
            f'MultiChannelMultiCrop got unexpected arguments {sorted(kwargs)}.'
        )


@TRANSFORMS.register_module()
class MultiChannelMultiCrop(BaseTransform):
    """DINO / iBOT / DINOv2 multi-crop for (H, W, C) images, any C.

    The channel-aware counterpart of :class:`MultiCrop` for microscopy
    and multispectral images (e.g. the float32 output of
    ``LoadMultiChannelTiff``). Each of the ``G`` global and ``L`` local
    views is:

    1. a random resized crop with :class:`MultiCrop`'s sampling rule
       (torchvision's: area share in ``*_scale``, aspect ratio in
       ``ratio``, ten tries then a centre crop) and resize;
    2. a horizontal flip with ``hflip_prob`` and a vertical flip with
       ``vflip_prob`` (microscopy has no "up");
    3. per-channel intensity jitter, :class:`ChannelIntensityJitter`
       built from ``jitter`` (brightness, contrast, gamma, channel drop),
       in place of DINO's RGB colour jitter and grayscale;
    4. Gaussian blur (sigma uniform in ``blur_sigma``; the same kernel on
       every channel) with DINO's per-view probabilities by default.

    There is no solarization: it inverts 8-bit values above 128, which
    means nothing for percentile-scaled intensities. MultiCrop's RGB
    arguments (``color_jitter``, ``grayscale_prob``, ``*_solarize_prob``,
    ...) are refused with the fix.

    Required keys: ``img`` (H, W, C) or (H, W), any dtype.

    Modified keys: ``img`` becomes a list of ``G + L`` float32
    (h, w, C) arrays, global crops first; ``img_shape`` is the global
    crop size. Added keys: ``num_global_crops`` (= G).

    Args:
        num_global_crops (int): G. Defaults to 2.
        num_local_crops (int): L, may be 0. Defaults to 8.
        global_size (int | tuple[int, int]): Global crop size. Defaults
            to 224.
        local_size (int | tuple[int, int]): Local crop size. Defaults to
            96.
        global_scale (tuple[float, float]): Area share of global crops.
            Defaults to (0.32, 1.0).
        local_scale (tuple[float, float]): Area share of local crops.
            Defaults to (0.05, 0.32).
        ratio (tuple[float, float]): Aspect-ratio (w / h) range.
            Defaults to (3/4, 4/3).
        hflip_prob (float): Horizontal flip probability. Defaults to 0.5.
        vflip_prob (float): Vertical flip probability. Defaults to 0.5.
        jitter (dict, optional): :class:`ChannelIntensityJitter`
            arguments; None for no intensity jitter. Defaults to
            brightness 0.4, contrast 0.4, gamma 0.2, applied with
            probability 0.8 (DINO's colour jitter probability).
        global_blur_prob (float | Sequence[float]): Blur probability of
            each global view. Defaults to (1.0, 0.1) (DINO).
        local_blur_prob (float | Sequence[float]): Defaults to 0.5.
        blur_sigma (tuple[float, float]): Defaults to (0.1, 2.0).
        blur_kernel_size (int, optional): Odd kernel size, None picks it
            from sigma. Defaults to 9 (DINOv2).
        interpolation (str): As in :class:`MultiCrop` ('auto',
            'bilinear', 'bicubic', 'nearest'; 'area' only shrinks by
            whole factors on more than 4 channels). Defaults to 'auto'.
    """

    def __init__(
        self,
        num_global_crops: int = 2,
        num_local_crops: int = 8,
        global_size: SizeType = 224,
        local_size: SizeType = 96,
        global_scale: Sequence[float] = (0.32, 1.0),
        local_scale: Sequence[float] = (0.05, 0.32),
        ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
        hflip_prob: float = 0.5,
        vflip_prob: float = 0.5,
        jitter: Optional[dict] = DEFAULT_JITTER,
        global_blur_prob: ProbType = (1.0, 0.1),
        local_blur_prob: ProbType = 0.5,
        blur_sigma: Sequence[float] = (0.1, 2.0),
        blur_kernel_size: Optional[int] = 9,
        interpolation: str = 'auto',
        **kwargs,
    ) -> None:
        _refuse_rgb_args(kwargs)
        # MultiCrop owns the crop sampling and the antialiased resize.
        self._geometry = MultiCrop(
            num_global_crops=num_global_crops,
            num_local_crops=num_local_crops,
            ratio=ratio,
            blur_kernel_size=blur_kernel_size,
            interpolation=interpolation,
        )
        self.num_global_crops = int(num_global_crops)
        self.num_local_crops = int(num_local_crops)
        self.global_size = size_pair(global_size, 'global_size')
        self.local_size = size_pair(local_size, 'local_size')
        self.global_scale = value_range(global_scale, 'global_scale')
        self.local_scale = value_range(local_scale, 'local_scale')
        self.hflip_prob, self.vflip_prob = view_probs(
            [hflip_prob, vflip_prob], 2, 'flip probabilities'
        )
        self.jitter = (
            None if jitter is None else ChannelIntensityJitter(**dict(jitter))
        )
        self.global_blur_prob = view_probs(
            global_blur_prob, self.num_global_crops, 'global_blur_prob'
        )
        self.local_blur_prob = view_probs(
            local_blur_prob, self.num_local_crops, 'local_blur_prob'
        )
        self.blur_sigma = value_range(blur_sigma, 'blur_sigma')
        self.blur_kernel_size = blur_kernel_size

    def _view(self, img: np.ndarray, out_hw, scale, blur_p: float):
        """One (h, w, C) float32 view of the (H, W, C) float32 ``img``."""
        h, w, c = img.shape
        top, left, ch, cw = self._geometry._crop_box(h, w, scale)
        # cv2 resizes more than 4 channels only from contiguous memory
        roi = np.ascontiguousarray(img[top : top + ch, left : left + cw])
        view = self._geometry._resize(roi, out_hw).reshape(*out_hw, c)
        if np.random.rand() < self.hflip_prob:
            view = view[:, ::-1]
        if np.random.rand() < self.vflip_prob:
            view = view[::-1]
        view = np.ascontiguousarray(view)
        if self.jitter is not None:
            view = self.jitter.transform({'img': view})['img']
        if np.random.rand() < blur_p:
            sigma = np.random.uniform(*self.blur_sigma)
            k = self.blur_kernel_size or 0
            view = cv2.GaussianBlur(view, (k, k), sigmaX=sigma, sigmaY=sigma)
            view = view.reshape(*out_hw, c)
        return view

    def transform(self, results: dict) -> dict:
        """Replace ``results['img']`` with the list of G + L views."""
        img = results['img']
        if not isinstance(img, np.ndarray) or img.ndim not in (2, 3):
            raise TypeError(
                'MultiChannelMultiCrop expects one decoded (H, W, C) or '
                "(H, W) array in results['img'], got "
                f'{type(img).__name__} {getattr(img, "shape", "")} (is a '
                'multi-crop applied twice?).'
            )
        img = img.astype(np.float32, copy=False)
        if img.ndim == 2:
            img = img[..., None]
        views = [
            self._view(img, self.global_size, self.global_scale, p)
            for p in self.global_blur_prob
        ]
        views += [
            self._view(img, self.local_size, self.local_scale, p)
            for p in self.local_blur_prob
        ]
        results['img'] = views
        results['img_shape'] = self.global_size
        results['num_global_crops'] = self.num_global_crops
        return results

    def __repr__(self) -> str:
        return (
            f'{self.__class__.__name__}('
            f'num_global_crops={self.num_global_crops}, '
            f'num_local_crops={self.num_local_crops}, '
            f'global_size={self.global_size}, '
            f'local_size={self.local_size}, '
            f'global_scale={self.global_scale}, '
            f'local_scale={self.local_scale}, jitter={self.jitter!r}, '
            f'global_blur_prob={self.global_blur_prob}, '
            f'local_blur_prob={self.local_blur_prob})'
        )
