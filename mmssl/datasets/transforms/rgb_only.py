"""Refuse RGB-only augmentations in a pipeline of multi-channel images.

Hue, saturation and grayscale are defined on three colour channels. On a
5-channel microscopy image mmpretrain's ``ColorJitter`` fails deep in
OpenCV with an unrelated message, or worse, quietly uses the first three
channels as if they were B, G and R. A pipeline whose loader reads
multi-channel TIFFs is therefore checked when its dataset is built, and
the transforms below are refused with the fix.
"""

from typing import Iterator, Optional, Sequence

#: Transform type -> what to use instead on C != 3 channels.
RGB_ONLY = {
    'ColorJitter': 'ChannelIntensityJitter (per-channel brightness, '
    'contrast and gamma)',
    'HueSafeColorJitter': 'ChannelIntensityJitter (per-channel '
    'brightness, contrast and gamma)',
    'RandomGrayscale': 'ChannelIntensityJitter(drop_prob=...) or nothing: '
    'grayscale mixes channels with RGB luma weights',
    'GaussianBlur': 'leave it out (it is PIL-based: 8-bit 1- or 3-channel '
    'images only)',
    'AutoAugment': 'RandomResizedCrop, RandomFlip and '
    'ChannelIntensityJitter (its policies are PIL colour operations)',
    'RandAugment': 'RandomResizedCrop, RandomFlip and '
    'ChannelIntensityJitter (its policies are PIL colour operations)',
    'MultiCrop': 'MultiChannelMultiCrop (the same global and local crops '
    'with flips and per-channel intensity jitter; MultiCrop works on '
    '3-channel uint8 images)',
    'MixedResolutionMultiCrop': 'MultiChannelMultiCrop (the same global '
    'and local crops with flips and per-channel intensity jitter)',
    'Solarize': 'leave it out (it inverts values above an 8-bit threshold, '
    'which means nothing for scaled intensities)',
    'LoadImageRobust': 'one loader: LoadMultiChannelTiff',
}

#: Loaders of multi-channel images.
MULTI_CHANNEL_LOADERS = ('LoadMultiChannelTiff',)


def _type_name(t) -> str:
    kind = t.get('type', '')
    name = kind if isinstance(kind, str) else getattr(kind, '__name__', '')
    return name.split('.')[-1]


def iter_transform_cfgs(pipeline) -> Iterator[dict]:
    """Every transform config in ``pipeline``, wrappers' contents too
    (``MultiView``'s lists of lists, ``RandomApply``, ``RandomChoice``)."""
    if isinstance(pipeline, dict):
        if 'type' in pipeline:
            yield pipeline
        for value in pipeline.values():
            if isinstance(value, (list, tuple, dict)):
                yield from iter_transform_cfgs(value)
    elif isinstance(pipeline, (list, tuple)):
        for item in pipeline:
            yield from iter_transform_cfgs(item)


def loader_channels(pipeline: Sequence) -> Optional[int]:
    """Channels a multi-channel loader in ``pipeline`` outputs.

    Returns:
        int | None: 0 when the loader's channel count is not fixed, the
        count when it is, None when there is no multi-channel loader.
    """
    for t in iter_transform_cfgs(pipeline):
        if _type_name(t) in MULTI_CHANNEL_LOADERS:
            if t.get('channel_indices') is not None:
                return len(t['channel_indices'])
            return int(t.get('channels') or 0)
    return None


def check_channel_pipeline(pipeline: Sequence, owner: str = '') -> None:
    """Refuse RGB-only transforms after a multi-channel loader.

    Args:
        pipeline (Sequence): Transform configs (dicts; built transforms
            are not inspected).
        owner (str): Who asks (named in the message).

    Raises:
        ValueError: The pipeline loads images whose channel count is not
            fixed to 3 and holds a transform in :data:`RGB_ONLY`; the
            message names the transform and what to use instead.
    """
    channels = loader_channels(pipeline)
    if channels is None or channels == 3:
        return
    what = f'{channels} channels' if channels else 'any number of channels'
    for t in iter_transform_cfgs(pipeline):
        name = _type_name(t)
        if name in RGB_ONLY:
            raise ValueError(
                f'{owner + ": " if owner else ""}{name} is an RGB-only '
                f'transform, but the pipeline loads images with {what} '
                f'(LoadMultiChannelTiff). Use {RGB_ONLY[name]} instead. '
                'If the files really are RGB, set channels=3 in '
                'LoadMultiChannelTiff.'
            )


def refuse_non_rgb(name: str, img) -> None:
    """Raise if ``img`` (H, W, C) has C other than 1 or 3, for ``name``."""
    if getattr(img, 'ndim', 0) == 3 and img.shape[2] not in (1, 3):
        fix = RGB_ONLY.get(name, 'ChannelIntensityJitter')
        raise ValueError(
            f'{name} is an RGB-only transform, got an image with '
            f'{img.shape[2]} channels (shape {img.shape}). Use {fix} '
            'instead.'
        )
