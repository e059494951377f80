"""Robust image loading: any bit depth, channel count and orientation."""

import io
from typing import Optional, Sequence, Tuple, Union

import cv2
import mmengine.fileio as fileio
import numpy as np
from mmcv.transforms import LoadImageFromFile

from mmssl.registry import TRANSFORMS

from .decode_cache import DecodeCache


class BadImageError(OSError):
    """A file that cannot be decoded as an image; ``reason`` says why."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f'{path}: {reason}')
        self.path = path
        self.reason = reason


_JPEG_MAGIC = b'\xff\xd8'


def _reduced_flag(factor: int, gray: bool) -> int:
    names = 'GRAYSCALE' if gray else 'COLOR'
    return getattr(cv2, f'IMREAD_REDUCED_{names}_{factor}')


def _stretch_range(
    img: np.ndarray, scale: Union[str, Tuple[float, float]]
) -> Tuple[float, float]:
    """The ``(lo, hi)`` input range that ``scale`` maps to [0, 255]."""
    if not isinstance(scale, str):
        lo, hi = (float(x) for x in scale)
        return lo, hi
    if scale == 'minmax':
        flat = img.reshape(-1)
        if img.dtype in (np.uint16, np.int16) and flat.flags.c_contiguous:
            lo, hi, _, _ = cv2.minMaxLoc(flat)  # one SIMD pass
            return float(lo), float(hi)
        return float(img.min()), float(img.max())
    if scale == 'full':
        if not np.issubdtype(img.dtype, np.integer):
            return 0.0, 1.0
        return 0.0, float(np.iinfo(img.dtype).max)
    raise ValueError(
        f"scale_16bit must be 'minmax', 'full' or (lo, hi), got {scale!r}."
    )


#: Added to the rounding offset of the integer fast path so that values
#: landing exactly on a grey level are not rounded down by float32 error.
_FLOOR_EPS = 1e-4


def scale_to_uint8(
    img: np.ndarray, scale: Union[str, Tuple[float, float]] = 'minmax'
) -> np.ndarray:
    """Map a 16-bit / float image to uint8.

    The result is ``floor(clip((x - lo) * 255 / (hi - lo), 0, 255))``.
    For uint16 input with whole-number ``lo`` (always the case for
    'minmax' and 'full') it runs as two vectorised OpenCV passes: a
    saturating ``x - lo`` in uint16 (exact), then ``convertScaleAbs``
    (float32 multiply, round, saturate), about 20x faster than the
    float32 formula; float32 rounding may move a value lying within
    ~1e-4 of a grey-level boundary by one level.

    Args:
        img (np.ndarray): Image of any dtype.
        scale (str | tuple[float, float]): ``'minmax'`` stretches each
            image's own [min, max] to [0, 255]; ``(lo, hi)`` maps that
            fixed range (values outside are clipped), e.g. ``(0, 4095)``
            for 12-bit sensors; ``'full'`` divides by the dtype's maximum
            (65535 for uint16).
    """
    if img.dtype == np.uint8:
        return img
    lo, hi = _stretch_range(img, scale)
    if hi <= lo:
        return np.zeros(img.shape, np.uint8)
    alpha = 255.0 / (hi - lo)
    if img.dtype == np.uint16 and lo == int(lo) and img.ndim <= 3:
        if lo > 0:
            shift = (min(lo, 65535.0),) * 4
            img = cv2.subtract(np.ascontiguousarray(img), shift)
        return cv2.convertScaleAbs(img, alpha=alpha, beta=-0.5 + _FLOOR_EPS)
    return np.clip((img.astype(np.float32) - lo) * alpha, 0, 255).astype(
        np.uint8
    )


@TRANSFORMS.register_module()
class LoadImageRobust(LoadImageFromFile):
    """Load any common image file as an HxWx3 uint8 array.

    A drop-in replacement of mmcv's ``LoadImageFromFile`` for image folders
    from the wild: 8- and 16-bit (and float) files, grayscale, RGB, RGBA,
    palette images, with the EXIF orientation applied. It decodes with
    OpenCV (``IMREAD_ANYDEPTH | IMREAD_ANYCOLOR``, which keeps 16 bits and
    applies EXIF orientation) and falls back to Pillow for what OpenCV
    cannot read. Files that cannot be decoded (zero bytes, truncated JPEG,
    not an image) raise :class:`BadImageError` naming the file and the
    reason, which :class:`ImageFolderDataset` turns into a skip.

    Required keys: ``img_path``. Modified keys: ``img``, ``img_shape``,
    ``ori_shape`` (the decoded size, after any reduced decoding).

    Args:
        channels (int): 3 (default) for HxWx3, 1 for an HxW gray image.
        channel_order (str): 'bgr' (default, like mmcv; pair with
            ``to_rgb=True`` in the data preprocessor) or 'rgb'.
        scale_16bit (str | tuple[float, float]): How to map 16-bit or
            float images to uint8: 'minmax' (per image, default), 'full'
            (divide by 65535) or a fixed ``(lo, hi)`` range.
        alpha (str): 'drop' (default) drops the alpha channel;
            'composite' blends over ``background`` (decodes without the
            EXIF step for files with alpha; JPEG has no alpha).
        background (int): Grey level for 'composite'. Defaults to 255.
        max_side (int, optional): If set, images whose longer side exceeds
            it are shrunk so that the longer side is ``max_side``. JPEGs
            are first decoded at 1/2, 1/4 or 1/8 size
            (``cv2.IMREAD_REDUCED_*``, the largest factor that keeps the
            longer side >= ``max_side``), which is several times faster
            than a full decode; other files are resized after decoding.
            Defaults to None (full resolution).
        check_truncated (bool): Treat JPEGs without an end-of-image marker
            as bad (OpenCV would return a half-grey picture). Defaults to
            True.
        decode_cache (dict, optional): On-disk cache of decoded images,
            e.g. ``dict(dir='data/.decode_cache', max_side=1024)``, so
            that epochs after the first skip decoding large 16-bit PNG /
            TIFF files. Keys: ``dir`` (required); ``max_side`` (sets this
            loader's ``max_side``; an error if both are set and differ);
            ``only_high_bit_depth`` (default True: store only images
            with more than 8 bits per sample). A hit returns exactly the
            array a miss computes. Local files only (no
            ``backend_args``). See :class:`DecodeCache`. Defaults to None.
        backend_args (dict, optional): mmengine file backend arguments.
    """

    def __init__(
        self,
        channels: int = 3,
        channel_order: str = 'bgr',
        scale_16bit: Union[str, Sequence[float]] = 'minmax',
        alpha: str = 'drop',
        background: int = 255,
        max_side: Optional[int] = None,
        check_truncated: bool = True,
        decode_cache: Optional[dict] = None,
        to_float32: bool = False,
        backend_args: Optional[dict] = None,
    ) -> None:
        super().__init__(to_float32=to_float32, backend_args=backend_args)
        if channels not in (1, 3):
            raise ValueError(f'channels must be 1 or 3, got {channels}.')
        if channel_order not in ('bgr', 'rgb'):
            raise ValueError(
                f"channel_order must be 'bgr' or 'rgb', got {channel_order!r}."
            )
        if alpha not in ('drop', 'composite'):
            raise ValueError(
                f"alpha must be 'drop' or 'composite', got {alpha!r}."
            )
        cache_cfg = dict(decode_cache or {})
        if decode_cache is not None:
            if 'dir' not in cache_cfg:
                raise ValueError("decode_cache needs a 'dir' key.")
            side = cache_cfg.pop('max_side', None)
            if side is not None and max_side not in (None, side):
                raise ValueError(
                    f'decode_cache max_side={side} differs from '
                    f'max_side={max_side}.'
                )
            max_side = side if side is not None else max_side
        if max_side is not None and max_side < 1:
            raise ValueError(f'max_side must be None or >= 1, got {max_side}.')
        if not isinstance(scale_16bit, str):
            scale_16bit = tuple(float(x) for x in scale_16bit)
            if len(scale_16bit) != 2 or scale_16bit[1] <= scale_16bit[0]:
                raise ValueError(
                    f'scale_16bit range must be (lo, hi) with lo < hi, got '
                    f'{scale_16bit!r}.'
                )
        self.channels = channels
        self.channel_order = channel_order
        self.scale_16bit = scale_16bit
        self.alpha = alpha
        self.background = background
        self.max_side = max_side
        self.check_truncated = check_truncated
        self._cache = None
        if decode_cache is not None:
            root = cache_cfg.pop('dir')
            only = cache_cfg.pop('only_high_bit_depth', True)
            if cache_cfg:
                raise ValueError(
                    f'Unknown decode_cache keys: {sorted(cache_cfg)}.'
                )
            settings = repr(
                (
                    channels == 1,
                    self.scale_16bit,
                    alpha,
                    background,
                    max_side,
                    check_truncated,
                )
            )
            self._cache = DecodeCache(root, settings, only)

    # ------------------------------------------------------------------ #
    def _jpeg_reduction(self, buf: bytes) -> int:
        """Largest factor in (8, 4, 2) keeping the longer side >= max_side."""
        try:
            from PIL import Image

            with Image.open(io.BytesIO(buf)) as im:
                w, h = im.size
        except Exception:
            return 1
        for f in (8, 4, 2):
            if max(h, w) // f >= self.max_side:
                return f
        return 1

    def _decode(self, buf: bytes, path: str) -> np.ndarray:
        if len(buf) == 0:
            raise BadImageError(path, 'zero-byte file')
        is_jpeg = buf[:2] == _JPEG_MAGIC
        if (
            is_jpeg
            and self.check_truncated
            and buf.rstrip(b'\x00')[-2:] != b'\xff\xd9'
        ):
            raise BadImageError(
                path, 'truncated JPEG (no end-of-image marker)'
            )
        arr = np.frombuffer(buf, np.uint8)
        gray = self.channels == 1
        img = None
        try:
            if is_jpeg:
                factor = (
                    self._jpeg_reduction(buf)
                    if self.max_side is not None
                    else 1
                )
                if factor > 1:
                    flag = _reduced_flag(factor, gray)
                else:
                    flag = cv2.IMREAD_GRAYSCALE if gray else cv2.IMREAD_COLOR
                img = cv2.imdecode(arr, flag)
            elif self.alpha == 'composite':
                img = cv2.imdecode(arr, cv2.IMREAD_UNCHANGED)
            else:
                img = cv2.imdecode(
                    arr, cv2.IMREAD_ANYDEPTH | cv2.IMREAD_ANYCOLOR
                )
        except cv2.error:
            img = None
        if img is None:
            img = self._decode_pil(buf, path)
        return img

    def _decode_pil(self, buf: bytes, path: str) -> np.ndarray:
        """Pillow fallback; returns BGR(A) or gray like cv2."""
        from PIL import Image, ImageOps

        try:
            with Image.open(io.BytesIO(buf)) as im:
                im.load()
                im = ImageOps.exif_transpose(im)
                if im.mode == 'P':
                    im = im.convert(
                        'RGBA' if 'transparency' in im.info else 'RGB'
                    )
                elif im.mode in ('CMYK', 'YCbCr', 'LAB', 'HSV'):
                    im = im.convert('RGB')
                elif im.mode == 'LA':
                    im = im.convert('RGBA')
                img = np.asarray(im)
        except Exception as e:  # noqa: BLE001 - any decoder failure
            raise BadImageError(
                path, f'not a readable image ({type(e).__name__}: {e})'
            )
        if img.ndim == 3 and img.shape[2] == 3:
            img = img[..., ::-1]
        elif img.ndim == 3 and img.shape[2] == 4:
            img = img[..., [2, 1, 0, 3]]
        return np.ascontiguousarray(img)

    def _to_output(self, img: np.ndarray) -> np.ndarray:
        """Decoded array -> uint8, alpha handled, gray if asked, resized."""
        if img.dtype == bool:
            img = img.astype(np.uint8) * 255
        if img.ndim == 3 and img.shape[2] == 4:
            if self.alpha == 'composite':
                a = img[..., 3:].astype(np.float32)
                a /= (
                    float(np.iinfo(img.dtype).max)
                    if np.issubdtype(img.dtype, np.integer)
                    else 1.0
                )
                bg = self.background * (
                    1
                    if img.dtype == np.uint8
                    else (
                        np.iinfo(img.dtype).max / 255.0
                        if np.issubdtype(img.dtype, np.integer)
                        else 1 / 255.0
                    )
                )
                img = (img[..., :3] * a + bg * (1 - a)).astype(img.dtype)
            else:
                img = img[..., :3]
        if img.ndim == 3 and img.shape[2] == 2:  # gray + alpha
            img = img[..., 0]
        img = scale_to_uint8(img, self.scale_16bit)
        if img.ndim == 3 and img.shape[2] == 1:
            img = img[..., 0]
        if self.channels == 1 and img.ndim == 3:
            img = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
        if self.max_side is not None and max(img.shape[:2]) > self.max_side:
            h, w = img.shape[:2]
            s = self.max_side / max(h, w)
            img = cv2.resize(
                img,
                (max(1, round(w * s)), max(1, round(h * s))),
                interpolation=cv2.INTER_AREA,
            )
        return img

    def _finish(self, img: np.ndarray) -> np.ndarray:
        """Gray -> 3 channels and the channel order (per-pixel steps).

        They commute with the resize, so they run on the smaller image
        and after the decode cache, which stores gray files as 1 channel.
        """
        if self.channels == 3:
            if img.ndim == 2:
                img = cv2.cvtColor(img, cv2.COLOR_GRAY2BGR)
            if self.channel_order == 'rgb':
                img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
        return img

    def _load_converted(self, path: str) -> np.ndarray:
        """Read, decode and convert ``path``, through the decode cache."""
        cache = self._cache
        entry = None
        if cache is not None and self.backend_args is None:
            entry = cache.entry_path(path)
            if entry is not None:
                img = cache.read(entry)
                if img is not None:
                    return img
        try:
            buf = fileio.get(path, backend_args=self.backend_args)
        except FileNotFoundError:
            raise BadImageError(path, 'file not found')
        except IsADirectoryError:
            raise BadImageError(path, 'is a directory')
        except PermissionError:
            raise BadImageError(path, 'permission denied')
        raw = self._decode(buf, path)
        img = self._to_output(raw)
        if (
            entry is not None
            and min(img.shape[:2]) > 0
            and (raw.dtype != np.uint8 or not cache.only_high_bit_depth)
        ):
            cache.write(entry, img)
        return img

    def transform(self, results: dict) -> dict:
        """Load ``results['img_path']``; raise BadImageError when bad."""
        path = results['img_path']
        img = self._load_converted(path)
        if min(img.shape[:2]) == 0:
            raise BadImageError(path, f'empty image of shape {img.shape}')
        img = self._finish(img)
        if self.to_float32:
            img = img.astype(np.float32)
        results['img'] = img
        results['img_shape'] = img.shape[:2]
        results['ori_shape'] = img.shape[:2]
        return results

    def __repr__(self) -> str:
        return (
            f'{self.__class__.__name__}(channels={self.channels}, '
            f"channel_order='{self.channel_order}', "
            f'scale_16bit={self.scale_16bit!r}, alpha={self.alpha!r}, '
            f'max_side={self.max_side}, '
            f'check_truncated={self.check_truncated}, '
            f'decode_cache={self._cache and self._cache.root!r})'
        )
