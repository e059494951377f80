"""Data preprocessors: two normalisations, and any channel count."""

from typing import Optional, Sequence

import torch
from mmpretrain.models.utils.data_preprocessor import (
    SelfSupDataPreprocessor,
    TwoNormDataPreprocessor,
)

from mmssl.registry import MODELS


@MODELS.register_module()
class TwoNormOrSingleDataPreprocessor(TwoNormDataPreprocessor):
    """mmpretrain's ``TwoNormDataPreprocessor`` for (image, target image)
    pairs, plus plain single-image batches.

    BEiT and CAE train on two views normalised differently (the second feeds
    the tokenizer). Feature extraction and kNN evaluation feed one stacked
    (B, C, H, W) batch, which mmpretrain's class iterates over as if it were
    the pair and silently mangles. Here such a batch is normalised with the
    first ``mean``/``std``, exactly as ``SelfSupDataPreprocessor`` would.
    """

    def forward(self, data: dict, training: bool = False) -> dict:
        inputs = data['inputs']
        if (
            isinstance(inputs, (list, tuple))
            and len(inputs) == 2
            and all(
                isinstance(x, torch.Tensor) and x.dim() == 4 for x in inputs
            )
        ):
            return super().forward(data, training)
        # one image per sample: behave like SelfSupDataPreprocessor
        return SelfSupDataPreprocessor.forward(self, data, training)


@MODELS.register_module()
class MultiChannelDataPreprocessor(SelfSupDataPreprocessor):
    """``SelfSupDataPreprocessor`` for images with any channel count.

    mmengine's preprocessor takes a ``mean``/``std`` of 1 or 3 values,
    and with ``to_rgb=True`` it indexes channels ``[2, 1, 0]``: on a
    5-channel image that silently keeps three of them. This one takes one
    ``mean``/``std`` value per channel (C of them, or one for all),
    checks every batch has C channels, and swaps BGR to RGB only when
    asked for 3-channel data (anything else is refused).

    Inputs are (B, C, H, W) tensors or a list of them (one per view).

    Args:
        mean (Sequence[float], optional): Per-channel means, in the units
            the loader outputs (e.g. [0, 1] after
            ``LoadMultiChannelTiff(scale='percentile')``). None: no
            normalisation.
        std (Sequence[float], optional): Per-channel standard deviations.
        to_rgb (bool): Swap BGR to RGB; only for 3 channels. Defaults to
            False.
        **kwargs: Other ``SelfSupDataPreprocessor`` arguments
            (``pad_size_divisor``, ``pad_value``, ``non_blocking``).
    """

    def __init__(
        self,
        mean: Optional[Sequence[float]] = None,
        std: Optional[Sequence[float]] = None,
        to_rgb: bool = False,
        **kwargs,
    ) -> None:
        if (mean is None) != (std is None):
            raise ValueError('Give both mean and std, or neither.')
        n = None if mean is None else len(mean)
        if mean is not None and len(std) not in (1, n):
            raise ValueError(
                f'std has {len(std)} values and mean {n}: give one value '
                'per channel (or one for all) in both.'
            )
        if to_rgb and n not in (None, 1, 3):
            raise ValueError(
                f'to_rgb=True swaps BGR to RGB, but mean has {n} channels; '
                'set to_rgb=False for multi-channel images.'
            )
        super().__init__(to_rgb=to_rgb, **kwargs)
        self._num_channels = None
        if mean is not None:
            self._enable_normalize = True
            c = max(n, len(std))
            self._num_channels = c if c > 1 else None  # None: any
            self.register_buffer(
                'mean',
                torch.tensor(mean, dtype=torch.float32).view(-1, 1, 1),
                False,
            )
            self.register_buffer(
                'std',
                torch.tensor(std, dtype=torch.float32).view(-1, 1, 1),
                False,
            )

    def _check(self, x: torch.Tensor) -> None:
        c = x.shape[1]
        if self._num_channels is not None and c != self._num_channels:
            raise ValueError(
                f'{type(self).__name__} has mean/std for '
                f'{self._num_channels} channels, got a batch of shape '
                f'{tuple(x.shape)} ({c} channels). Set mean and std to '
                f"{c} values each, or check the loader's channels."
            )
        if self._channel_conversion and c != 3:
            raise ValueError(
                f'to_rgb=True swaps BGR to RGB, got {c}-channel images; '
                'set to_rgb=False in the data preprocessor.'
            )

    def forward(self, data: dict, training: bool = False) -> dict:
        """Check the channel count, then normalise like the parent."""
        inputs = data['inputs']
        views = inputs if isinstance(inputs, (list, tuple)) else [inputs]
        for x in views:
            if isinstance(x, torch.Tensor):
                self._check(x)
        return super().forward(data, training)
