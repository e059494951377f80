"""Volume loading and MONAI dictionary transforms as pipeline steps.

A 3D pipeline is a list of mmcv-style steps working on one ``results``
dict. :class:`LoadVolume` reads ``results['img_path']`` (NIfTI through
nibabel, ``.npy`` through NumPy, both via MONAI's ``LoadImage``) into
``results['img']``, a channel-first ``MetaTensor`` (C, D, H, W) that keeps
the affine; :class:`MONAITransform` runs any MONAI dictionary transform on
the same dict (orientation, spacing, intensity windows, ...)::

    pipeline = [
        dict(type='LoadVolume'),
        dict(type='MONAITransform', transform='Orientationd',
             keys='img', axcodes='RAS'),
        dict(type='MONAITransform', transform='Spacingd', keys='img',
             pixdim=(1.5, 1.5, 2.0), mode='bilinear'),
        dict(type='MONAITransform', transform='ScaleIntensityRanged',
             keys='img', a_min=-175, a_max=250, b_min=0.0, b_max=1.0,
             clip=True),  # CT HU window
    ]
"""

from typing import Optional

import numpy as np
import torch
from mmcv.transforms import BaseTransform

from mmssl.extras import require_3d
from mmssl.registry import TRANSFORMS

from .loading import BadImageError


@TRANSFORMS.register_module()
class LoadVolume(BaseTransform):
    """Read a volume file into ``results['img']`` (C, D, H, W).

    Uses MONAI's ``LoadImage`` (``ensure_channel_first=True``): NIfTI
    (``.nii``, ``.nii.gz``) keeps its affine for orientation and spacing
    transforms; a ``.npy`` array of shape (D, H, W) gets one channel (an
    array with a leading channel axis of size <= 4 keeps it).

    A file that cannot be read, is truncated, holds no 3D array or has
    non-finite values raises :class:`BadImageError` with the reason, so
    :class:`VolumeFolderDataset` skips and names it.

    Args:
        dtype (str): Output dtype. Defaults to ``'float32'``.
        check_finite (bool): Refuse volumes with NaN or inf. Defaults to
            True.
    """

    def __init__(
        self, dtype: str = 'float32', check_finite: bool = True
    ) -> None:
        require_3d('LoadVolume')
        from monai.transforms import LoadImage

        self.dtype = np.dtype(dtype)
        self.check_finite = check_finite
        self._load = LoadImage(image_only=True, dtype=self.dtype)

    def _read(self, path: str) -> torch.Tensor:
        if path.lower().endswith('.npy'):
            arr = np.load(path, allow_pickle=False)
            if arr.ndim == 3:
                arr = arr[None]
            if arr.ndim != 4 or arr.shape[0] > 4:
                raise ValueError(
                    f'expected (D, H, W) or (C, D, H, W) with C <= 4, got '
                    f'shape {arr.shape}'
                )
            from monai.data import MetaTensor

            return MetaTensor(torch.from_numpy(arr.astype(self.dtype)))
        img = self._load(path)
        if img.ndim == 3:
            img = img[None]
        elif img.ndim == 4:  # nibabel gives (D, H, W, C): channel first
            img = img.permute(3, 0, 1, 2)
        return img

    def transform(self, results: dict) -> dict:
        path = results['img_path']
        try:
            img = self._read(path)
        except Exception as e:  # noqa: BLE001 - any read failure is "bad"
            raise BadImageError(path, f'{type(e).__name__}: {e}') from e
        if img.ndim != 4 or min(img.shape[1:]) < 1:
            raise BadImageError(
                path, f'not a 3D volume: shape {tuple(img.shape)}'
            )
        if self.check_finite and not torch.isfinite(img).all():
            raise BadImageError(path, 'contains NaN or inf values')
        results['img'] = img
        results['img_shape'] = tuple(img.shape[1:])
        results['ori_shape'] = tuple(img.shape[1:])
        return results


@TRANSFORMS.register_module()
class MONAITransform(BaseTransform):
    """Run a MONAI dictionary transform as a pipeline step.

    Args:
        transform (str): Name in ``monai.transforms`` of a dictionary
            transform (its name ends with ``d``), e.g. ``'Orientationd'``,
            ``'Spacingd'``, ``'ScaleIntensityRanged'``,
            ``'ScaleIntensityRangePercentilesd'``, ``'CropForegroundd'``.
        **kwargs: Its arguments (``keys='img'`` for the volume).

    Only the entries named by ``keys`` are handed to MONAI (it would take
    mmcv's ``img_path`` and ``img_shape`` for meta dictionaries of
    ``img``); its results are written back and ``img_shape`` updated.
    Random MONAI transforms are reseeded from NumPy's global generator on
    every call, which mmengine seeds per rank and DataLoader worker, so
    workers do not repeat each other's draws.
    """

    def __init__(self, transform: str, **kwargs) -> None:
        require_3d('MONAITransform')
        import monai.transforms as mt

        cls = getattr(mt, transform, None)
        if cls is None or not transform.endswith('d'):
            raise ValueError(
                f'{transform!r} is not a MONAI dictionary transform (a '
                'name in monai.transforms ending with "d", e.g. '
                "'Spacingd').",
            )
        self.name = transform
        self.kwargs = kwargs
        self.monai = cls(**kwargs)
        self.random = isinstance(self.monai, mt.Randomizable)
        keys = kwargs.get('keys', ())
        self.keys = [keys] if isinstance(keys, str) else list(keys)

    def transform(self, results: dict) -> Optional[dict]:
        if self.random:
            self.monai.set_random_state(seed=np.random.randint(2**31))
        out = self.monai({k: results[k] for k in self.keys if k in results})
        if out is None:
            return None
        results.update(out)
        img = results.get('img')
        if img is not None and getattr(img, 'ndim', 0) == 4:
            results['img_shape'] = tuple(img.shape[1:])
        return results

    def __repr__(self) -> str:
        args = ', '.join(f'{k}={v!r}' for k, v in sorted(self.kwargs.items()))
        return f'MONAITransform({self.name}, {args})'
