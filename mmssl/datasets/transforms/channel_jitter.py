"""Intensity jitter for images with any number of channels."""

from typing import Optional

import numpy as np
from mmcv.transforms import BaseTransform

from mmssl.registry import TRANSFORMS


def _factor(strength: float, name: str) -> float:
    strength = float(strength)
    if not 0.0 <= strength < 1.0:
        raise ValueError(f'{name} must be in [0, 1), got {strength}.')
    return strength


@TRANSFORMS.register_module()
class ChannelIntensityJitter(BaseTransform):
    """Per-channel brightness, contrast and gamma, and channel drop.

    The channel-aware counterpart of colour jitter for multi-channel
    images (fluorescence microscopy, multispectral): hue, saturation and
    grayscale are defined for RGB only, while these act on each channel
    alone, so they work for any channel count C (C = 3 included). Each
    channel ``x`` in turn (a fresh draw per channel, or one draw for all
    when ``per_channel=False``):

    1. brightness: ``x * b``, ``b ~ U[1 - brightness, 1 + brightness]``;
    2. contrast: ``m + (x - m) * c`` with ``m`` the channel mean,
       ``c ~ U[1 - contrast, 1 + contrast]``;
    3. gamma: ``M * (x / M) ** g`` with ``M`` the channel maximum (the
       range is kept, so it works on raw and on [0, 1] values),
       ``g ~ U[1 - gamma, 1 + gamma]``;

    values are then clipped to ``>= 0`` (intensities). Finally, with
    ``drop_prob > 0`` each channel is set to 0 with that probability
    (at least one channel is always kept), which teaches a network not
    to rely on one stain.

    Required keys: ``img`` (H, W, C) or (H, W). Modified keys: ``img``
    (float32, same shape).

    Args:
        brightness (float): Strength in [0, 1). Defaults to 0.4.
        contrast (float): Strength in [0, 1). Defaults to 0.4.
        gamma (float): Strength in [0, 1). Defaults to 0.2.
        per_channel (bool): Independent draws per channel. Defaults to
            True.
        drop_prob (float): Probability that a channel is zeroed. Defaults
            to 0.
        prob (float): Probability of jittering at all (the channel drop
            included). Defaults to 1.
    """

    def __init__(
        self,
        brightness: float = 0.4,
        contrast: float = 0.4,
        gamma: float = 0.2,
        per_channel: bool = True,
        drop_prob: float = 0.0,
        prob: float = 1.0,
    ) -> None:
        self.brightness = _factor(brightness, 'brightness')
        self.contrast = _factor(contrast, 'contrast')
        self.gamma = _factor(gamma, 'gamma')
        for name, p in (('drop_prob', drop_prob), ('prob', prob)):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f'{name} must be in [0, 1], got {p}.')
        self.per_channel = bool(per_channel)
        self.drop_prob = float(drop_prob)
        self.prob = float(prob)

    def _draw(self, strength: float, c: int) -> Optional[np.ndarray]:
        if strength == 0:
            return None
        n = c if self.per_channel else 1
        draw = np.random.uniform(1 - strength, 1 + strength, n)
        return np.broadcast_to(draw, (c,)).astype(np.float32)

    def transform(self, results: dict) -> dict:
        """Jitter ``results['img']`` channel by channel."""
        if np.random.rand() >= self.prob:
            return results
        img = results['img']
        squeeze = img.ndim == 2
        x = img.astype(np.float32)
        if squeeze:
            x = x[..., None]
        c = x.shape[2]
        b = self._draw(self.brightness, c)
        k = self._draw(self.contrast, c)
        g = self._draw(self.gamma, c)
        if b is not None:
            x = x * b
        if k is not None:
            mean = x.mean(axis=(0, 1), dtype=np.float64).astype(np.float32)
            x = mean + (x - mean) * k
        np.maximum(x, 0.0, out=x)
        if g is not None:
            top = x.max(axis=(0, 1))
            safe = np.where(top > 0, top, 1.0).astype(np.float32)
            x = safe * np.power(x / safe, g)
        if self.drop_prob > 0:
            drop = np.random.rand(c) < self.drop_prob
            if drop.all():
                drop[np.random.randint(c)] = False
            x[..., drop] = 0.0
        results['img'] = np.ascontiguousarray(x[..., 0] if squeeze else x)
        return results

    def __repr__(self) -> str:
        return (
            f'{self.__class__.__name__}(brightness={self.brightness}, '
            f'contrast={self.contrast}, gamma={self.gamma}, '
            f'per_channel={self.per_channel}, '
            f'drop_prob={self.drop_prob}, prob={self.prob})'
        )
