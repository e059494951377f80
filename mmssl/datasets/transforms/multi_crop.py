"""Multi-crop augmentation of DINO / iBOT / DINOv2, on uint8 NumPy + cv2.

References:
    - Caron et al. 2021, "Emerging Properties in Self-Supervised Vision
      Transformers" (DINO), https://arxiv.org/abs/2104.14294
    - Oquab et al. 2023, "DINOv2: Learning Robust Visual Features without
      Supervision", https://arxiv.org/abs/2304.07193
"""

import math
from typing import Optional, Sequence, Tuple

import cv2
import numpy as np
from mmcv.transforms import BaseTransform

from mmssl.registry import TRANSFORMS

from .color_matrix import LUMA_RGB, random_color_matrix
from .crop_args import (
    ProbType,
    SizeType,
    size_pair,
    value_range,
    view_probs,
)
from .rgb_only import refuse_non_rgb

_INTERP = {
    'nearest': cv2.INTER_NEAREST,
    'bilinear': cv2.INTER_LINEAR,
    'bicubic': cv2.INTER_CUBIC,
    'area': cv2.INTER_AREA,
}


@TRANSFORMS.register_module()
class MultiCrop(BaseTransform):
    """DINO / iBOT / DINOv2 multi-crop augmentation, fast on uint8 arrays.

    Makes ``G = num_global_crops`` global views and ``L = num_local_crops``
    local views of one decoded image. Each view is:

    1. a random resized crop (area share of the image in ``*_scale``,
       aspect ratio in ``ratio``; torchvision's sampling rule, ten tries
       then a centre crop), cut and resized in one ``cv2.resize`` of the
       crop's ROI (a view into the image, no full-image copy);
    2. horizontal flip with ``flip_prob``;
    3. colour jitter with ``color_jitter_prob`` and grayscale with
       ``grayscale_prob``;
    4. Gaussian blur (sigma uniform in ``blur_sigma``) with a per-view
       probability: by default 1.0 on global view 1, 0.1 on global view 2,
       0.5 on local views (Caron et al. 2021, Oquab et al. 2023);
    5. solarization (threshold 128) with a per-view probability: by
       default 0.2 on global view 2 only.

    Colour jitter approximation (documented on purpose): brightness,
    contrast, saturation and hue are all affine maps of the pixel colour,
    so they are composed (in a random order, as torchvision does) into
    one 3x4 matrix, together with the optional grayscale, and applied with
    a single ``cv2.transform`` on uint8 (saturating to [0, 255]). Two
    differences from torchvision: (a) values are clipped only once at the
    end instead of after each step, and (b) hue is a rotation of the
    colour about the grey axis by ``2 * pi * h`` instead of an HSV shift;
    it keeps grey pixels grey, has the same direction (red -> green ->
    blue) and is exact for the pure primaries at thirds of a turn, but
    changes saturated colours' HSV saturation slightly. This avoids any
    colour-space round trip.

    All randomness comes from NumPy's global RNG, so mmengine's
    ``worker_init_fn`` seeding (per rank and worker) applies.

    Required keys: ``img`` (HxW, HxWx1 or HxWx3 uint8; HxWx4 drops alpha).

    Modified keys: ``img`` becomes a list of ``G + L`` HxWx3 uint8 arrays,
    global crops first; ``img_shape`` becomes the global crop size.

    Added keys: ``num_global_crops`` (= G); ``num_gram_crops`` (= G) with
    ``gram_size``.

    Args:
        num_global_crops (int): G. Defaults to 2.
        num_local_crops (int): L, may be 0. Defaults to 8.
        global_size (int | tuple[int, int]): Output size of global crops,
            int or (h, w). Defaults to 224.
        local_size (int | tuple[int, int]): Output size of local crops.
            Defaults to 96.
        global_scale (tuple[float, float]): Area share range of global
            crops. Defaults to (0.32, 1.0).
        local_scale (tuple[float, float]): Area share range of local
            crops. Defaults to (0.05, 0.32).
        ratio (tuple[float, float]): Aspect-ratio (w / h) range of crops.
            Defaults to (3/4, 4/3).
        flip_prob (float): Horizontal flip probability. Defaults to 0.5.
        color_jitter (tuple[float, float, float, float]): Brightness,
            contrast, saturation, hue strengths. Defaults to
            (0.4, 0.4, 0.2, 0.1).
        color_jitter_prob (float): Defaults to 0.8.
        grayscale_prob (float): Defaults to 0.2.
        global_blur_prob (float | Sequence[float]): Blur probability of
            each global view (a shorter list repeats its last value).
            Defaults to (1.0, 0.1).
        local_blur_prob (float): Defaults to 0.5.
        blur_sigma (tuple[float, float]): Defaults to (0.1, 2.0).
        blur_kernel_size (int, optional): Odd kernel size; DINOv2 uses 9.
            ``None`` picks it from sigma (about 6 sigma, as cv2 does).
            Defaults to 9.
        global_solarize_prob (float | Sequence[float]): Defaults to
            (0.0, 0.2).
        local_solarize_prob (float): Defaults to 0.0.
        solarize_threshold (int): Pixels >= threshold are inverted.
            Defaults to 128.
        interpolation (str): 'bilinear', 'bicubic', 'area', 'nearest', or
            'auto': when shrinking by k >= 2, a box average by the integer
            factor k (cv2's fast INTER_AREA path) then bilinear for the
            rest, which avoids aliasing like PIL's antialiased resize at
            a third of INTER_AREA's cost; else bilinear. 'bilinear' is
            the fastest (aliased when shrinking). Defaults to 'auto'.
        channel_order (str): Channel order of the input, 'bgr' (cv2
            loading, the default) or 'rgb'; it matters for the grey
            weights and the hue direction. Output keeps the input order.
        gram_size (int | tuple[int, int], optional): When set, G more views
            are appended after the local ones: each global crop's region
            and flip again, resized to ``gram_size`` without colour or blur
            distortions, for the Gram teacher of DINOv3 (its Gram-anchoring
            stage shows the Gram teacher such high-resolution, undistorted
            crops; ``DINOFamily(num_gram_crops=G)`` reads them). Adds
            ``num_gram_crops``. Defaults to None (no such views).
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
        flip_prob: float = 0.5,
        color_jitter: Sequence[float] = (0.4, 0.4, 0.2, 0.1),
        color_jitter_prob: float = 0.8,
        grayscale_prob: float = 0.2,
        global_blur_prob: ProbType = (1.0, 0.1),
        local_blur_prob: ProbType = 0.5,
        blur_sigma: Sequence[float] = (0.1, 2.0),
        blur_kernel_size: Optional[int] = 9,
        global_solarize_prob: ProbType = (0.0, 0.2),
        local_solarize_prob: ProbType = 0.0,
        solarize_threshold: int = 128,
        interpolation: str = 'auto',
        channel_order: str = 'bgr',
        gram_size: Optional[SizeType] = None,
    ) -> None:
        if num_global_crops < 1 or num_local_crops < 0:
            raise ValueError(
                f'MultiCrop needs num_global_crops >= 1 and num_local_crops '
                f'>= 0, got {num_global_crops} and {num_local_crops}.'
            )
        self.num_global_crops = int(num_global_crops)
        self.num_local_crops = int(num_local_crops)
        self.global_size = size_pair(global_size, 'global_size')
        self.local_size = size_pair(local_size, 'local_size')
        self.global_scale = value_range(global_scale, 'global_scale')
        self.local_scale = value_range(local_scale, 'local_scale')
        self.ratio = value_range(ratio, 'ratio')
        self.flip_prob = float(flip_prob)
        if len(color_jitter) != 4 or min(color_jitter) < 0:
            raise ValueError(
                'color_jitter must be (brightness, contrast, saturation, '
                f'hue) >= 0, got {color_jitter!r}.'
            )
        if color_jitter[3] > 0.5:
            raise ValueError(
                f'hue jitter must be <= 0.5, got {color_jitter[3]}.'
            )
        self.color_jitter = tuple(float(x) for x in color_jitter)
        self.color_jitter_prob = float(color_jitter_prob)
        self.grayscale_prob = float(grayscale_prob)
        self.global_blur_prob = view_probs(
            global_blur_prob, self.num_global_crops, 'global_blur_prob'
        )
        self.local_blur_prob = view_probs(
            local_blur_prob, self.num_local_crops, 'local_blur_prob'
        )
        self.blur_sigma = value_range(blur_sigma, 'blur_sigma')
        if blur_kernel_size is not None and (
            blur_kernel_size < 1 or blur_kernel_size % 2 == 0
        ):
            raise ValueError(
                f'blur_kernel_size must be odd and positive or '
                f'None, got {blur_kernel_size}.'
            )
        self.blur_kernel_size = blur_kernel_size
        self.global_solarize_prob = view_probs(
            global_solarize_prob, self.num_global_crops, 'global_solarize_prob'
        )
        self.local_solarize_prob = view_probs(
            local_solarize_prob, self.num_local_crops, 'local_solarize_prob'
        )
        self.solarize_threshold = int(solarize_threshold)
        lut = np.arange(256, dtype=np.uint8)
        lut[self.solarize_threshold :] = 255 - lut[self.solarize_threshold :]
        self._solarize_lut = lut
        if interpolation not in _INTERP and interpolation != 'auto':
            raise ValueError(
                f'interpolation must be one of '
                f'{sorted(_INTERP) + ["auto"]}, got '
                f'{interpolation!r}.'
            )
        self.interpolation = interpolation
        if channel_order not in ('bgr', 'rgb'):
            raise ValueError(
                f"channel_order must be 'bgr' or 'rgb', got {channel_order!r}."
            )
        self.channel_order = channel_order
        self.gram_size = (
            None if gram_size is None else size_pair(gram_size, 'gram_size')
        )
        # Grey weights and hue rotation expressed in the input's channel
        # order: P maps the input order to RGB (a permutation).
        perm = [2, 1, 0] if channel_order == 'bgr' else [0, 1, 2]
        self._perm = np.eye(3)[perm]  # rgb = P @ input
        self._luma = LUMA_RGB @ self._perm  # (3,) in input order

    # ------------------------------------------------------------------ #
    # random crop box
    # ------------------------------------------------------------------ #
    def _crop_box(
        self, h: int, w: int, scale: Tuple[float, float]
    ) -> Tuple[int, int, int, int]:
        """Sample (top, left, crop_h, crop_w) as torchvision does."""
        area = h * w
        log_ratio = (math.log(self.ratio[0]), math.log(self.ratio[1]))
        for _ in range(10):
            target_area = area * np.random.uniform(*scale)
            aspect = math.exp(np.random.uniform(*log_ratio))
            cw = int(round(math.sqrt(target_area * aspect)))
            ch = int(round(math.sqrt(target_area / aspect)))
            if 0 < cw <= w and 0 < ch <= h:
                top = np.random.randint(0, h - ch + 1)
                left = np.random.randint(0, w - cw + 1)
                return top, left, ch, cw
        # Fallback: the largest centre crop within the ratio range.
        in_ratio = w / h
        if in_ratio < self.ratio[0]:
            cw, ch = w, int(round(w / self.ratio[0]))
        elif in_ratio > self.ratio[1]:
            ch, cw = h, int(round(h * self.ratio[1]))
        else:
            cw, ch = w, h
        ch, cw = max(1, min(ch, h)), max(1, min(cw, w))
        return (h - ch) // 2, (w - cw) // 2, ch, cw

    def _resize(self, roi: np.ndarray, out_hw: Tuple[int, int]) -> np.ndarray:
        """Resize a crop ROI (a view, not a copy) to ``out_hw``."""
        ch, cw = roi.shape[:2]
        size = (out_hw[1], out_hw[0])
        if self.interpolation != 'auto':
            return cv2.resize(
                roi, size, interpolation=_INTERP[self.interpolation]
            )
        k = min(ch // out_hw[0], cw // out_hw[1])
        if k < 2:
            return cv2.resize(roi, size, interpolation=cv2.INTER_LINEAR)
        # Antialiased shrink: box-average by the integer factor k (cv2's
        # fast path of INTER_AREA for exact multiples; drops < k border
        # pixels), then bilinear for the remaining factor in [1, 2).
        roi = roi[: ch // k * k, : cw // k * k]
        small = cv2.resize(
            roi, (cw // k, ch // k), interpolation=cv2.INTER_AREA
        )
        return cv2.resize(small, size, interpolation=cv2.INTER_LINEAR)

    # ------------------------------------------------------------------ #
    # colour
    # ------------------------------------------------------------------ #
    def _color_matrix(self, mean: np.ndarray) -> Optional[np.ndarray]:
        """Random 3x4 affine colour map (jitter then grayscale) or None;
        ``mean`` is the crop's (3,) mean colour in input order."""
        return random_color_matrix(
            mean,
            self.color_jitter,
            self.color_jitter_prob,
            self.grayscale_prob,
            self._luma,
            self._perm,
        )

    # ------------------------------------------------------------------ #
    def _view(
        self,
        img: np.ndarray,
        out_hw: Tuple[int, int],
        scale: Tuple[float, float],
        blur_p: float,
        solarize_p: float,
        geometry: Optional[list] = None,
    ) -> np.ndarray:
        """One view; appends ``(crop ROI, flipped)`` to ``geometry``."""
        h, w = img.shape[:2]
        top, left, ch, cw = self._crop_box(h, w, scale)
        roi = img[top : top + ch, left : left + cw]
        view = self._resize(roi, out_hw)
        flipped = np.random.rand() < self.flip_prob
        if flipped:
            view = cv2.flip(view, 1)
        if geometry is not None:
            geometry.append((roi, flipped))
        M = self._color_matrix(np.asarray(cv2.mean(view)[:3]))
        if M is not None:
            view = cv2.transform(view, M)
        if np.random.rand() < blur_p:
            sigma = np.random.uniform(*self.blur_sigma)
            k = self.blur_kernel_size or 0
            view = cv2.GaussianBlur(view, (k, k), sigmaX=sigma, sigmaY=sigma)
        if np.random.rand() < solarize_p:
            view = cv2.LUT(view, self._solarize_lut)
        return view

    @staticmethod
    def _to_3ch(img: np.ndarray) -> np.ndarray:
        if img.ndim == 2 or (img.ndim == 3 and img.shape[2] == 1):
            return cv2.cvtColor(img, cv2.COLOR_GRAY2BGR)
        if img.ndim == 3 and img.shape[2] == 4:
            return img[..., :3]
        if img.ndim == 3 and img.shape[2] == 3:
            return img
        raise ValueError(
            f'MultiCrop expects an HxW, HxWx1, HxWx3 or HxWx4 '
            f'image, got shape {img.shape}.'
        )

    def transform(self, results: dict) -> dict:
        """Replace ``results['img']`` with the list of G + L views."""
        img = results['img']
        if isinstance(img, list):
            raise TypeError(
                'MultiCrop expects one decoded image in '
                "results['img'], got a list (is it applied "
                'twice?).'
            )
        if img.ndim == 3 and img.shape[2] not in (1, 3, 4):
            refuse_non_rgb(type(self).__name__, img)
        if img.dtype != np.uint8:
            raise TypeError(
                f'MultiCrop works on uint8 images, got {img.dtype}; load '
                'with LoadImageRobust (it scales 16-bit files to uint8).'
            )
        img = self._to_3ch(img)
        views, geometry = [], []
        for i in range(self.num_global_crops):
            views.append(
                self._view(
                    img,
                    self.global_size,
                    self.global_scale,
                    self.global_blur_prob[i],
                    self.global_solarize_prob[i],
                    geometry if self.gram_size else None,
                )
            )
        for i in range(self.num_local_crops):
            views.append(
                self._view(
                    img,
                    self.local_size,
                    self.local_scale,
                    self.local_blur_prob[i],
                    self.local_solarize_prob[i],
                )
            )
        for roi, flipped in geometry:  # Gram teacher: same crop, high res
            view = self._resize(roi, self.gram_size)
            views.append(cv2.flip(view, 1) if flipped else view)
        results['img'] = views
        results['img_shape'] = self.global_size
        results['num_global_crops'] = self.num_global_crops
        if self.gram_size:
            results['num_gram_crops'] = self.num_global_crops
        return results

    def __repr__(self) -> str:
        return (
            f'{self.__class__.__name__}('
            f'num_global_crops={self.num_global_crops}, '
            f'num_local_crops={self.num_local_crops}, '
            f'global_size={self.global_size}, '
            f'local_size={self.local_size}, '
            f'global_scale={self.global_scale}, '
            f'local_scale={self.local_scale}, ratio={self.ratio}, '
            f'color_jitter={self.color_jitter}, '
            f'global_blur_prob={self.global_blur_prob}, '
            f'local_blur_prob={self.local_blur_prob}, '
            f'global_solarize_prob={self.global_solarize_prob}, '
            f'interpolation={self.interpolation!r})'
        )
