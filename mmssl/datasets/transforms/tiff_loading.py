"""Multi-channel (e.g. 16-bit microscopy) TIFF loading with tifffile."""

import io
from typing import Optional, Sequence, Tuple, Union

import mmengine.fileio as fileio
import numpy as np
from mmcv.transforms import BaseTransform

from mmssl.extras import require_multichannel
from mmssl.registry import TRANSFORMS

from .loading import BadImageError

ScaleType = Union[str, Sequence[float], Sequence[Sequence[float]]]

#: Pixels read to estimate the percentiles of one channel; larger images
#: are subsampled with a fixed stride (deterministic).
_PERCENTILE_SAMPLES = 1 << 20


def _axes_layout(axes: str) -> Optional[str]:
    """'CHW' / 'HWC' when tifffile's series axes name the channel axis."""
    if len(axes) != 3:
        return None
    if axes[0] in 'CS':
        return 'CHW'
    if axes[-1] in 'CS':
        return 'HWC'
    return None


def _parse_scale(scale: ScaleType):
    """'none', 'percentile', (lo, hi) or [(lo, hi), ...] -> checked form."""
    if isinstance(scale, str):
        if scale not in ('none', 'percentile'):
            raise ValueError(
                "scale must be 'none', 'percentile', (lo, hi) or one "
                f'(lo, hi) per channel, got {scale!r}.'
            )
        return scale
    arr = np.asarray(scale, np.float64)
    if arr.shape == (2,):
        arr = arr[None]
    if arr.ndim != 2 or arr.shape[1] != 2 or not (arr[:, 1] > arr[:, 0]).all():
        raise ValueError(
            'a fixed scale is (lo, hi) or a list of (lo, hi), one per '
            f'channel, with lo < hi; got {scale!r}.'
        )
    return arr


@TRANSFORMS.register_module()
class LoadMultiChannelTiff(BaseTransform):
    """Load a 2D multi-channel TIFF as an (H, W, C) float32 array.

    For microscopy and other images with any number of channels (4 to 6
    fluorescence channels, 16-bit), read with ``tifffile`` (the
    ``[multichannel]`` extra: ``pip install -e ".[multichannel]"``).
    Channels are kept as they are: no colour conversion, no BGR order.

    Layout: ``(C, H, W)`` and ``(H, W, C)`` files are both read.
    ``layout='auto'`` takes the channel axis from the file's axes when
    tifffile knows them (ImageJ ``CYX``, ``YXS``), else the end axis whose
    size is ``channels``, else the smaller end axis. A 2D file is one
    channel; axes of size 1 (e.g. ``TZCYX`` stacks with one T and Z) are
    dropped.

    Scaling (``scale``), per file and per channel, to float32:

    - ``'percentile'`` (default): ``(x - p_lo) / (p_hi - p_lo)`` clipped
      to [0, 1], with ``p_lo, p_hi`` the ``percentiles`` of that channel
      in that file (robust to hot pixels and to gain that varies between
      acquisitions). A constant channel becomes 0.
    - ``(lo, hi)``: the same fixed range for every channel, or
      ``[(lo, hi), ...]`` one per channel (e.g. ``(0, 4095)`` for 12-bit
      cameras); values outside are clipped to [0, 1].
    - ``'none'``: the raw values as float32 (exact for 8- and 16-bit);
      normalise them with per-channel ``mean``/``std`` in the data
      preprocessor.

    Bad files (zero bytes, truncated or not a TIFF, another channel count
    than ``channels``, more than 2 spatial axes, NaN values) raise
    :class:`BadImageError` naming the file and the reason, which
    :class:`ImageFolderDataset` turns into a skip.

    Required keys: ``img_path``. Modified keys: ``img`` (H, W, C float32),
    ``img_shape``, ``ori_shape``.

    Args:
        channels (int, optional): Channels every file must have; others
            are bad files. Defaults to None (any count).
        layout (str): ``'auto'``, ``'CHW'`` or ``'HWC'``. Defaults to
            ``'auto'``.
        scale (str | tuple | list): ``'percentile'``, ``'none'``,
            ``(lo, hi)`` or one ``(lo, hi)`` per channel. Defaults to
            ``'percentile'``.
        percentiles (tuple[float, float]): Low and high percentiles for
            ``scale='percentile'``. Defaults to (1.0, 99.8).
        channel_indices (Sequence[int], optional): Keep these channels,
            in this order (after the check against ``channels``).
            Defaults to None (all).
        backend_args (dict, optional): mmengine file backend arguments.
    """

    def __init__(
        self,
        channels: Optional[int] = None,
        layout: str = 'auto',
        scale: ScaleType = 'percentile',
        percentiles: Tuple[float, float] = (1.0, 99.8),
        channel_indices: Optional[Sequence[int]] = None,
        backend_args: Optional[dict] = None,
    ) -> None:
        # fail now, at build time, without the extra (the module itself
        # is not kept: transforms are pickled into spawned workers)
        require_multichannel('LoadMultiChannelTiff')
        if channels is not None and channels < 1:
            raise ValueError(f'channels must be >= 1 or None, got {channels}.')
        if layout not in ('auto', 'CHW', 'HWC'):
            raise ValueError(
                f"layout must be 'auto', 'CHW' or 'HWC', got {layout!r}."
            )
        lo, hi = (float(p) for p in percentiles)
        if not 0.0 <= lo < hi <= 100.0:
            raise ValueError(
                'percentiles must be (low, high) with 0 <= low < high <= '
                f'100, got {percentiles!r}.'
            )
        self.scale = _parse_scale(scale)
        if channel_indices is not None:
            channel_indices = [int(i) for i in channel_indices]
            if channels is not None and not all(
                0 <= i < channels for i in channel_indices
            ):
                raise ValueError(
                    f'channel_indices {channel_indices} must lie in '
                    f'[0, {channels}) for channels={channels}.'
                )
        n_out = len(channel_indices) if channel_indices else channels
        if (
            isinstance(self.scale, np.ndarray)
            and len(self.scale) > 1
            and n_out is not None
            and len(self.scale) != n_out
        ):
            raise ValueError(
                f'scale gives {len(self.scale)} (lo, hi) ranges for '
                f'{n_out} channels; give one range or one per channel.'
            )
        self.channels = channels
        self.layout = layout
        self.percentiles = (lo, hi)
        self.channel_indices = channel_indices
        self.backend_args = backend_args

    # ------------------------------------------------------------------ #
    def _read(self, path: str) -> Tuple[np.ndarray, str]:
        """The file's first series and its axes; BadImageError if bad."""
        try:
            buf = fileio.get(path, backend_args=self.backend_args)
        except FileNotFoundError:
            raise BadImageError(path, 'file not found')
        except IsADirectoryError:
            raise BadImageError(path, 'is a directory')
        except PermissionError:
            raise BadImageError(path, 'permission denied')
        if len(buf) == 0:
            raise BadImageError(path, 'zero-byte file')
        tifffile = require_multichannel('LoadMultiChannelTiff')
        try:
            with tifffile.TiffFile(io.BytesIO(buf)) as tif:
                series = tif.series[0]
                return series.asarray(), series.axes
        except Exception as e:  # noqa: BLE001 - any decoder failure
            raise BadImageError(
                path, f'not a readable TIFF ({type(e).__name__}: {e})'
            )

    def _to_hwc(self, arr: np.ndarray, axes: str, path: str) -> np.ndarray:
        """(C, H, W) / (H, W, C) / (H, W) -> (H, W, C)."""
        keep = [i for i, n in enumerate(arr.shape) if n != 1]
        if arr.ndim > 3 and len(keep) <= 3:  # drop singleton T, Z, ...
            axes = (
                ''.join(axes[i] for i in keep) if len(axes) == arr.ndim else ''
            )
            arr = arr.reshape([arr.shape[i] for i in keep])
        if arr.ndim == 2:
            return arr[..., None]
        if arr.ndim != 3:
            raise BadImageError(
                path,
                f'has shape {arr.shape} (axes {axes!r}); only 2D images '
                'of shape (C, H, W) or (H, W, C) are read',
            )
        layout = self.layout
        if layout == 'auto':
            layout = _axes_layout(axes) or self._guess_layout(arr.shape, path)
        return arr.transpose(1, 2, 0) if layout == 'CHW' else arr

    def _guess_layout(self, shape: tuple, path: str) -> str:
        first, last = shape[0], shape[2]
        if self.channels is not None and (first == self.channels) != (
            last == self.channels
        ):
            return 'CHW' if first == self.channels else 'HWC'
        if first == last:
            raise ValueError(
                f'{path}: cannot tell the channel axis of shape {shape}; '
                "set layout='CHW' or layout='HWC' in LoadMultiChannelTiff."
            )
        return 'CHW' if first < last else 'HWC'

    def _scale(self, img: np.ndarray) -> np.ndarray:
        """(H, W, C) -> float32, scaled per channel as configured."""
        img = img.astype(np.float32)
        if isinstance(self.scale, str) and self.scale == 'none':
            return img
        if isinstance(self.scale, str):  # percentile
            flat = img.reshape(-1, img.shape[2])
            step = max(1, len(flat) // _PERCENTILE_SAMPLES)
            lo, hi = np.percentile(flat[::step], self.percentiles, axis=0)
        else:
            rng = self.scale
            if len(rng) > 1 and len(rng) != img.shape[2]:
                raise ValueError(
                    f'scale gives {len(rng)} (lo, hi) ranges but the image '
                    f'has {img.shape[2]} channels.'
                )
            lo, hi = rng[:, 0], rng[:, 1]
        span = np.asarray(hi - lo, np.float32)
        inv = np.where(span > 0, 1.0 / np.maximum(span, 1e-12), 0.0)
        out = (img - np.asarray(lo, np.float32)) * inv.astype(np.float32)
        return np.clip(out, 0.0, 1.0, out=out)

    def transform(self, results: dict) -> dict:
        """Load ``results['img_path']``; raise BadImageError when bad."""
        path = results['img_path']
        arr, axes = self._read(path)
        if arr.dtype.kind not in 'uif' and arr.dtype != bool:
            raise BadImageError(path, f'unsupported pixel type {arr.dtype}')
        img = self._to_hwc(arr, axes, path)
        if min(img.shape) == 0:
            raise BadImageError(path, f'empty image of shape {img.shape}')
        if self.channels is not None and img.shape[2] != self.channels:
            raise BadImageError(
                path,
                f'has {img.shape[2]} channels (shape {arr.shape}), '
                f'expected channels={self.channels}',
            )
        if arr.dtype.kind == 'f' and not np.isfinite(img).all():
            raise BadImageError(path, 'has NaN or infinite values')
        if self.channel_indices is not None:
            img = img[..., self.channel_indices]
        img = np.ascontiguousarray(self._scale(img))
        results['img'] = img
        results['img_shape'] = img.shape[:2]
        results['ori_shape'] = img.shape[:2]
        return results

    def __repr__(self) -> str:
        scale = self.scale
        if isinstance(scale, np.ndarray):
            scale = scale.tolist()
        return (
            f'{self.__class__.__name__}(channels={self.channels}, '
            f'layout={self.layout!r}, scale={scale!r}, '
            f'percentiles={self.percentiles}, '
            f'channel_indices={self.channel_indices})'
        )
