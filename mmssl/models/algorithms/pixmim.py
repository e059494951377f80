"""PixMIM (Liu et al. 2023): MAE with a low-frequency pixel target."""

from typing import Dict, List

import torch
from mmpretrain.models.selfsup import MAE
from mmpretrain.structures import DataSample

from mmssl.registry import MODELS


def low_pass_filter(img: torch.Tensor, radius: float) -> torch.Tensor:
    """Keep the spatial frequencies within ``radius`` of zero.

    An ideal (circular) low-pass filter: the centred 2D Fourier spectrum of
    each channel is multiplied by a disc of ``radius`` frequency units
    (cycles per image) around the zero frequency, then transformed back.
    The mean (zero frequency) is always kept.

    Args:
        img (Tensor): (B, C, H, W) images.
        radius (float): Cut-off, in cycles per image; ``>= hypot(H, W)/2``
            keeps everything.

    Returns:
        Tensor: (B, C, H, W) filtered images, real, in ``img``'s dtype.
    """
    height, width = img.shape[-2:]
    work = img if img.dtype == torch.float64 else img.float()  # no fp16 FFT
    spectrum = torch.fft.fftshift(torch.fft.fft2(work), dim=(-2, -1))
    # frequency of each centred bin: -H//2 .. (H-1)//2 (fftshift's order)
    fy = torch.arange(height, device=img.device) - height // 2
    fx = torch.arange(width, device=img.device) - width // 2
    dist = torch.sqrt(fy[:, None].float() ** 2 + fx[None, :].float() ** 2)
    keep = (dist <= radius).to(spectrum.dtype)  # (H, W)
    spectrum = torch.fft.ifftshift(spectrum * keep, dim=(-2, -1))
    return torch.fft.ifft2(spectrum).real.to(img.dtype)


@MODELS.register_module()
class PixMIM(MAE):
    """PixMIM: MAE whose reconstruction target is low-pass filtered.

    "PixMIM: Rethinking Pixel Reconstruction in Masked Image Modeling",
    https://arxiv.org/abs/2303.02416. The decoder predicts the masked
    patches of the image with its high frequencies removed
    (:func:`low_pass_filter`), so the encoder spends no capacity on
    texture noise; the paper also trains on a simple resized crop
    (resize, then a padded random crop) instead of MAE's random resized
    crop, which is the config's pipeline. Backbone, decoder and head are
    mmpretrain's MAE parts.

    Args:
        low_freq_radius (float): Cut-off of the target's filter in cycles
            per image (the paper: 40 at 224 px). Defaults to 40.
        **kwargs: MAE's arguments (backbone, neck, head, ...).
    """

    def __init__(self, *args, low_freq_radius: float = 40, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if low_freq_radius <= 0:
            raise ValueError(
                f'low_freq_radius must be > 0 (cycles per image), got '
                f'{low_freq_radius}; the paper uses 40 at 224 px.'
            )
        self.low_freq_radius = low_freq_radius

    def loss(
        self, inputs: torch.Tensor, data_samples: List[DataSample], **kwargs
    ) -> Dict[str, torch.Tensor]:
        img = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
        latent, mask, ids_restore = self.backbone(img)
        pred = self.neck(latent, ids_restore)
        target = low_pass_filter(img, self.low_freq_radius)  # (B, C, H, W)
        return dict(loss=self.head.loss(pred, target, mask))
