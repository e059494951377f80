"""Pipeline rules: MMSelfSup 1.x transforms -> mmpretrain/mmssl ones.

Each rule takes the transform dict (its ``type`` already without a
``mmselfsup.``/``mmcls.`` prefix), where it sits and the report, and
returns the new dict, a list of dicts (spliced into the pipeline) or
``None`` (dropped).
"""

from .report import MigrationReport


def _rename_args(d: dict, names: dict) -> dict:
    """``d`` with keys renamed at once (``names``: old -> new)."""
    return {names.get(k, k): v for k, v in d.items()}


def pack_inputs(d: dict, where: str, report: MigrationReport) -> dict:
    """PackSelfSupInputs(key, algorithm_keys, pseudo_label_keys,
    meta_keys) -> PackInputs(input_key, algorithm_keys, meta_keys)."""
    out = dict(type='PackInputs')
    if d.get('key', 'img') != 'img':
        out['input_key'] = d['key']
    keys = list(d.get('algorithm_keys', [])) + list(
        d.get('pseudo_label_keys', [])
    )
    if 'mask' in keys:  # PackInputs packs 'mask' itself, as a tensor
        keys.remove('mask')
        report.change(where, "PackInputs packs 'mask' without algorithm_keys")
    if keys:
        out['algorithm_keys'] = keys
    if 'meta_keys' in d:
        out['meta_keys'] = list(d['meta_keys'])
    report.change(where, 'PackSelfSupInputs -> PackInputs')
    return out


def gaussian_blur(d: dict, where: str, report: MigrationReport) -> dict:
    """RandomGaussianBlur(sigma_min, sigma_max, prob) -> GaussianBlur with
    a sigma drawn uniformly from ``(sigma_min, sigma_max)``."""
    report.change(
        where,
        'RandomGaussianBlur(sigma_min, sigma_max) -> '
        "GaussianBlur(magnitude_range, magnitude_std='inf')",
    )
    return dict(
        type='GaussianBlur',
        magnitude_range=(d.get('sigma_min', 0.1), d.get('sigma_max', 2.0)),
        magnitude_std='inf',
        prob=d.get('prob', 0.5),
    )


def solarize(d: dict, where: str, report: MigrationReport) -> dict:
    """RandomSolarize(threshold, prob) -> Solarize(thr, prob)."""
    report.change(where, 'RandomSolarize(threshold) -> Solarize(thr)')
    return dict(
        type='Solarize', thr=d.get('threshold', 128), prob=d.get('prob', 0.5)
    )


def resized_crop(d: dict, where: str, report: MigrationReport) -> dict:
    """RandomResizedCrop(size, scale, ratio) -> RandomResizedCrop(scale,
    crop_ratio_range, aspect_ratio_range) (all three renamed at once)."""
    if 'size' not in d:
        return d  # already mmpretrain's form
    report.change(
        where,
        'RandomResizedCrop(size, scale, ratio) -> '
        '(scale, crop_ratio_range, aspect_ratio_range)',
    )
    out = _rename_args(
        d,
        dict(
            size='scale', scale='crop_ratio_range', ratio='aspect_ratio_range'
        ),
    )
    out['type'] = 'RandomResizedCrop'
    return out


def random_crop(d: dict, where: str, report: MigrationReport) -> dict:
    """RandomCrop(size) -> RandomCrop(crop_size)."""
    if 'size' not in d:
        return d
    report.change(where, 'RandomCrop(size) -> RandomCrop(crop_size)')
    return _rename_args(d, dict(size='crop_size'))


def color_jitter(d: dict, where: str, report: MigrationReport) -> dict:
    """ColorJitter -> mmssl's HueSafeColorJitter (same arguments; mmcv's
    hue shift fails under numpy >= 2)."""
    report.change(where, 'ColorJitter -> HueSafeColorJitter')
    return dict(d, type='HueSafeColorJitter')


def random_rotation(d: dict, where: str, report: MigrationReport) -> list:
    """RandomRotation(degrees, ...) -> torchvision's, between ToPIL and
    ToNumpy (mmpretrain has no numpy RandomRotation)."""
    report.change(
        where,
        'RandomRotation -> ToPIL, torchvision/RandomRotation, ToNumpy',
    )
    args = {k: v for k, v in d.items() if k != 'type'}
    return [
        dict(type='ToPIL', to_rgb=False),
        dict(type='torchvision/RandomRotation', **args),
        dict(type='ToNumpy', to_bgr=False),
    ]


def rotation_labels(d: dict, where: str, report: MigrationReport) -> None:
    """RotationWithLabels: mmssl's RotationPred rotates inside the model."""
    report.change(
        where, 'RotationWithLabels dropped (RotationPred rotates the batch)'
    )
    return None


def patch_labels(d: dict, where: str, report: MigrationReport) -> dict:
    """RandomPatchWithLabels -> RelativeLocPatches(patch_size=64)."""
    report.change(
        where,
        'RandomPatchWithLabels -> RelativeLocPatches(patch_size=64) '
        '(the 64-pixel patch of a 3x3 grid, as MMSelfSup drew it)',
    )
    return dict(type='RelativeLocPatches', patch_size=64)


def to_numpy(d: dict, where: str, report: MigrationReport) -> dict:
    """MMClassification 1.0's ToNumpy(to_rgb) converted RGB back to BGR:
    mmpretrain's ToNumpy calls it ``to_bgr``."""
    if 'to_rgb' not in d:
        return d
    report.change(where, 'ToNumpy(to_rgb) -> ToNumpy(to_bgr)')
    return _rename_args(d, dict(to_rgb='to_bgr'))


def mae_crop(d: dict, where: str, report: MigrationReport) -> dict:
    """MAERandomResizedCrop(size, scale, interpolation) -> pillow-backed
    RandomResizedCrop."""
    report.change(where, 'MAERandomResizedCrop -> RandomResizedCrop(pillow)')
    out = resized_crop(dict(d, type='RandomResizedCrop'), where, report)
    interp = out.get('interpolation', 3)
    names = {0: 'nearest', 2: 'bilinear', 3: 'bicubic'}
    out['interpolation'] = names.get(interp, interp)
    out.setdefault('backend', 'pillow')
    return out


TRANSFORM_RULES = {
    'PackSelfSupInputs': pack_inputs,
    'RandomGaussianBlur': gaussian_blur,
    'RandomSolarize': solarize,
    'RandomResizedCrop': resized_crop,
    'RandomCrop': random_crop,
    'ColorJitter': color_jitter,
    'RandomRotation': random_rotation,
    'RotationWithLabels': rotation_labels,
    'RandomPatchWithLabels': patch_labels,
    'MAERandomResizedCrop': mae_crop,
    'ToNumpy': to_numpy,
}
