# Copyright (c) mmssl contributors. All rights reserved.
"""Multi-crop whose crop sizes are chosen per batch (mixed resolution)."""

import contextlib
from contextvars import ContextVar
from typing import Iterator, Optional, Sequence

from mmssl.registry import TRANSFORMS

from .crop_args import SizeType, size_pair
from .multi_crop import MultiCrop

#: Size index of the sample being loaded, set by ``MixedResolutionDataset``.
_SIZE_INDEX: ContextVar[Optional[int]] = ContextVar(
    'mmssl_size_index', default=None
)


@contextlib.contextmanager
def size_index_scope(index: Optional[int]) -> Iterator[None]:
    """Run the code inside with ``current_size_index() == index``."""
    token = _SIZE_INDEX.set(index)
    try:
        yield
    finally:
        _SIZE_INDEX.reset(token)


def current_size_index() -> Optional[int]:
    """The size index of the sample being loaded (None outside a scope)."""
    return _SIZE_INDEX.get()


@TRANSFORMS.register_module()
class MixedResolutionMultiCrop(MultiCrop):
    """:class:`MultiCrop` with one of several (global, local) size pairs.

    The pair is chosen per batch by ``MixedResolutionBatchSampler`` and
    handed to this transform through ``MixedResolutionDataset`` (the
    dataset wrapper sets :func:`current_size_index` while it loads a
    sample), so every sample of a batch has the same sizes and the batch
    still collates. All other arguments are those of :class:`MultiCrop`;
    the per-sample seeding of exact resume is untouched (the size comes
    from the sampler, not from the transform's random draws).

    Args:
        global_sizes (Sequence[int | tuple]): Global crop size of each pair.
        local_sizes (Sequence[int | tuple]): Local crop size of each pair,
            as many as ``global_sizes``.
        **kwargs: :class:`MultiCrop` arguments except the two sizes.
    """

    def __init__(
        self,
        global_sizes: Sequence[SizeType],
        local_sizes: Sequence[SizeType],
        **kwargs,
    ) -> None:
        if len(global_sizes) != len(local_sizes) or not global_sizes:
            raise ValueError(
                'global_sizes and local_sizes must be non-empty and of the '
                f'same length, got {list(global_sizes)} and '
                f'{list(local_sizes)}.'
            )
        self.global_sizes = [
            size_pair(s, 'global_sizes') for s in global_sizes
        ]
        self.local_sizes = [size_pair(s, 'local_sizes') for s in local_sizes]
        super().__init__(
            global_size=self.global_sizes[0],
            local_size=self.local_sizes[0],
            **kwargs,
        )

    def transform(self, results: dict) -> dict:
        """Multi-crop at the size pair of the current batch."""
        index = current_size_index()
        if index is None:
            raise RuntimeError(
                'MixedResolutionMultiCrop got no size index: wrap the '
                "dataset in dict(type='MixedResolutionDataset', dataset=...) "
                "and use batch_sampler=dict(type='MixedResolutionBatchSampler"
                "', ratios=...).",
            )
        if not 0 <= index < len(self.global_sizes):
            raise IndexError(
                f'size index {index} for {len(self.global_sizes)} size pairs'
            )
        self.global_size = self.global_sizes[index]
        self.local_size = self.local_sizes[index]
        results = super().transform(results)
        results['size_index'] = index
        return results


__all__ = [
    'MixedResolutionMultiCrop',
    'current_size_index',
    'size_index_scope',
]
