"""Unlabelled (or folder-labelled) images from one or several folders."""

import os.path as osp
from typing import Dict, Optional, Sequence, Tuple, Union

import numpy as np
from mmengine.dataset import BaseDataset
from mmengine.logging import print_log

from mmssl.registry import DATASETS

from .image_index import (
    IMG_EXTENSIONS,
    build_index,
    index_cache_key,
    load_index_cache,
    map_or_copy,
    save_index_cache,
)
from .path_table import PathTable
from .transforms.loading import BadImageError
from .transforms.rgb_only import check_channel_pipeline

#: Errors that mean "this file is bad", turned into a skip. Other errors
#: (bugs in a transform) propagate.
BAD_FILE_ERRORS = (BadImageError, OSError)


_PLAIN_LOADERS = ('LoadImageFromFile', 'mmcv.LoadImageFromFile')


def robust_loading(pipeline: Sequence) -> list:
    """Swap a plain ``LoadImageFromFile`` for :class:`LoadImageRobust`.

    mmcv's loader stops training on the first unreadable file. For an
    image folder from the wild, a ``LoadImageFromFile`` config (e.g. one
    inherited from an mmpretrain recipe) whose arguments the robust
    loader shares (``to_float32``, ``backend_args``) becomes
    ``LoadImageRobust``, which decodes the same images to the same BGR
    uint8 arrays but raises :class:`BadImageError` for bad files, so they
    are skipped and counted.
    """
    out = []
    for t in pipeline:
        if (
            isinstance(t, dict)
            and t.get('type') in _PLAIN_LOADERS
            and set(t) <= {'type', 'to_float32', 'backend_args'}
        ):
            t = dict(t, type='LoadImageRobust')
            print_log(
                'ImageFolderDataset: LoadImageFromFile -> '
                'LoadImageRobust (bad files are skipped).',
                'current',
            )
        out.append(t)
    return out


def _in_worker() -> bool:
    """Whether this is a DataLoader worker process."""
    import torch.utils.data

    return torch.utils.data.get_worker_info() is not None


@DATASETS.register_module()
class ImageFolderDataset(BaseDataset):
    """Images from one or several folders (recursive) or a list file.

    Zero-code pretraining data: point ``data_root`` at a folder (or a list
    of folders) and every ``jpg/jpeg/png/bmp/tif/tiff/webp`` file below it,
    in any letter case and nesting, is a sample, in sorted order. The
    index is kept in two NumPy arrays (:class:`PathTable`), so forked
    DataLoader workers and ranks on one node do not copy it, and can be
    cached to ``cache_file`` so restarts skip the scan.

    Bad files (zero bytes, truncated, not an image, unreadable) do not stop
    training: the sample is replaced by another one chosen
    deterministically (``(idx + k * 7919) % len``), each bad file is
    warned about once per process with its reason (in DataLoader workers
    at DEBUG level when :class:`BadFileSummaryHook` reports them once per
    run instead), and the skipped files
    are attached to the returned sample's metainfo as ``skipped_files``
    (a list of ``(path, reason)``), so the main process can count them
    across workers and ranks (see :class:`BadFileSummaryHook`). When the
    share of bad files this process has read exceeds ``max_bad_ratio``
    (checked after ``min_checked`` reads) it raises an error listing the
    first few. Use ``LoadImageRobust`` as the loading transform: it raises
    :class:`BadImageError` with a reason.

    Args:
        data_root (str | list[str]): Folder(s) to search recursively.
        ann_file (str, optional): Text file with one image path per line
            (relative to the first ``data_root`` if given), optionally
            followed by an integer label. Replaces the folder scan.
        pipeline (list): Transforms.
        with_label (bool): Label = name of the first sub-folder under each
            root (classes sorted and merged by name across roots); files
            directly in a root are left out. Sets ``gt_label``. Defaults to
            False. ``metainfo=dict(classes=[...])`` fixes the classes and
            their order (e.g. a val folder labelled like the train
            folder); files of other sub-folders are left out.
        extensions (Sequence[str]): Accepted extensions (any case).
        cache_file (str, optional): Where to save / load the index. It is
            reused when roots, options and the modification times of every
            scanned directory (each file added, removed or renamed changes
            its directory's mtime) are unchanged.
        rebuild_cache (bool): Ignore an existing cache. Defaults to False.
        max_bad_ratio (float): Stop when more than this share of the
            files read is bad. Defaults to 0.05.
        min_checked (int): Reads before the ratio is checked. Defaults to
            100 (or the dataset size if smaller).
        max_refetch (int): Substitutes tried for one index. Defaults to
            100.
        lazy_init (bool): Defer the scan to first use. Defaults to False.
        metainfo (dict, optional): Extra meta information.
        indices (int | Sequence[int], optional): Keep only the first
            ``indices`` images (int) or these positions of the sorted
            index, e.g. for a quick trial run. Defaults to None (all).
        share_paths (bool): Memory-map the file list (from ``cache_file``,
            or else from an already unlinked temporary file) so DataLoader
            workers, forked or spawned, and ranks on one node share one
            copy instead of each holding the paths. Defaults to True.
    """

    #: Set by :class:`~mmssl.engine.hooks.BadFileSummaryHook` before the
    #: workers start: it reports each bad file once per run, so workers
    #: log theirs at DEBUG level only.
    hook_reports_bad_files = False

    def __init__(
        self,
        data_root: Union[str, Sequence[str], None] = None,
        ann_file: Optional[str] = None,
        pipeline: Sequence = (),
        with_label: bool = False,
        extensions: Sequence[str] = IMG_EXTENSIONS,
        cache_file: Optional[str] = None,
        rebuild_cache: bool = False,
        max_bad_ratio: float = 0.05,
        min_checked: int = 100,
        max_refetch: int = 100,
        lazy_init: bool = False,
        metainfo: Optional[dict] = None,
        test_mode: bool = False,
        indices: Union[int, Sequence[int], None] = None,
        share_paths: bool = True,
    ) -> None:
        self.subset = indices
        check_channel_pipeline(pipeline, type(self).__name__)
        if data_root is None and ann_file is None:
            raise ValueError(
                'ImageFolderDataset needs data_root (a folder '
                'or a list of folders) or ann_file.'
            )
        roots = (
            []
            if data_root is None
            else (
                [data_root] if isinstance(data_root, str) else list(data_root)
            )
        )
        for r in roots:
            if ann_file is None and not osp.isdir(r):
                raise FileNotFoundError(
                    f'data_root {r!r} is not a folder. Pass '
                    '--cfg-options train_dataloader.dataset.data_root=DIR '
                    '(a path or a list of paths).'
                )
        self.roots = [osp.abspath(r) for r in roots]
        self.with_label = with_label
        self.extensions = tuple(
            e.lower() if e.startswith('.') else '.' + e.lower()
            for e in extensions
        )
        self.cache_file = cache_file
        self.rebuild_cache = rebuild_cache
        self.share_paths = share_paths
        if not 0.0 <= max_bad_ratio <= 1.0:
            raise ValueError(
                f'max_bad_ratio must be in [0, 1], got {max_bad_ratio}.'
            )
        self.max_bad_ratio = max_bad_ratio
        self.min_checked = min_checked
        self._bad: Dict[int, str] = {}
        self._n_good = 0
        super().__init__(
            ann_file=ann_file or '',
            metainfo=metainfo,
            data_root='',
            pipeline=robust_loading(pipeline),
            serialize_data=False,
            lazy_init=True,
            max_refetch=max_refetch,
            test_mode=test_mode,
        )
        if not lazy_init:
            self.full_init()

    # ------------------------------------------------------------------ #
    # index
    # ------------------------------------------------------------------ #
    def _cache_key(self) -> str:
        return index_cache_key(
            self.roots, self.ann_file, self.with_label, self.extensions
        )

    def _build_index(self) -> Tuple[dict, list]:
        return build_index(
            self.roots, self.ann_file, self.with_label, self.extensions
        )

    def full_init(self) -> None:
        """Scan the folders (or load the cache) once."""
        if self._fully_initialized:
            return
        index = None
        if self.cache_file and not self.rebuild_cache:
            index = load_index_cache(
                self.cache_file,
                self._cache_key(),
                self.roots,
                self.ann_file,
                self.share_paths,
            )
        from_cache = index is not None
        if index is None:
            index, dir_mtimes = self._build_index()
            if self.cache_file:
                save_index_cache(
                    self.cache_file,
                    self._cache_key(),
                    index,
                    dir_mtimes,
                    self.ann_file,
                )
                if self.share_paths:
                    with np.load(self.cache_file) as z:
                        index['paths'] = map_or_copy(self.cache_file, z, True)
        index = self._relabel(index)
        self._paths: PathTable = index['paths']
        self._labels: np.ndarray = index['labels']
        self._sources: np.ndarray = index['sources']
        if self.subset is not None:
            self._keep_subset(self.subset)
        if self.with_label and index['classes']:
            self._metainfo['classes'] = tuple(index['classes'])
        self._metainfo['data_roots'] = tuple(self.roots)
        if self.share_paths and not self._paths.is_mapped and self._paths:
            try:  # one copy in the page cache for every worker and rank
                self._paths = PathTable.shared(self._paths)
            except OSError as e:
                print_log(
                    f'Cannot memory-map the file list ({e}); kept in memory.',
                    'current',
                    level=30,
                )
        if len(self._paths) == 0:
            where = self.ann_file or self.roots
            raise FileNotFoundError(
                f'No images with extensions {self.extensions} found in '
                f'{where}. Check data_root (a folder or list of folders) '
                'or pass extensions=[...].'
            )
        print_log(
            f'ImageFolderDataset: {len(self._paths)} images from '
            f'{len(self.roots) or 1} source(s)'
            f'{" (index cache)" if from_cache else ""}.',
            'current',
        )
        self._fully_initialized = True

    def _relabel(self, index: dict) -> dict:
        """Label by ``metainfo['classes']`` when given; drop other files."""
        given = list(self._metainfo.get('classes') or [])
        if not self.with_label or not given or given == index['classes']:
            return index
        lookup = {c: i for i, c in enumerate(given)}
        # old label -> new label; the last entry maps -1 (root files)
        lut = np.array(
            [lookup.get(c, -1) for c in index['classes']] + [-1], np.int32
        )
        labels = lut[index['labels']]
        keep = np.flatnonzero(labels >= 0)
        paths = index['paths']
        return dict(
            index,
            paths=PathTable([paths[int(i)] for i in keep]),
            labels=labels[keep],
            sources=index['sources'][keep],
            classes=given,
        )

    def _keep_subset(self, indices: Union[int, Sequence[int]]) -> None:
        n = len(self._paths)
        if isinstance(indices, int):
            keep = np.arange(min(max(indices, 0), n))
        else:
            keep = np.asarray(list(indices), dtype=np.int64)
            bad = keep[(keep < -n) | (keep >= n)]
            if bad.size:
                raise IndexError(
                    f'indices {bad[:5].tolist()} are out of range for '
                    f'{n} images.'
                )
        self._paths = PathTable([self._paths[int(i)] for i in keep])
        self._labels = self._labels[keep]
        self._sources = self._sources[keep]

    # ------------------------------------------------------------------ #
    def __len__(self) -> int:
        if not self._fully_initialized:
            self.full_init()
        return len(self._paths)

    def get_data_info(self, idx: int) -> dict:
        info = dict(
            img_path=self._paths[idx],
            sample_idx=int(idx),
            source=int(self._sources[idx]),
        )
        if self._labels[idx] >= 0:
            info['gt_label'] = int(self._labels[idx])
        return info

    def get_img_path(self, idx: int) -> str:
        return self._paths[idx]

    @property
    def sources(self) -> np.ndarray:
        """(N,) int16 index of the root each image comes from."""
        return self._sources

    def get_gt_labels(self) -> np.ndarray:
        return self._labels.astype(np.int64)

    # ------------------------------------------------------------------ #
    # bad files
    # ------------------------------------------------------------------ #
    def _record_bad(self, idx: int, path: str, reason: str) -> None:
        if idx not in self._bad:
            self._bad[idx] = reason
            # a hook that reports each file once per run (from the samples'
            # skipped_files) makes the per-worker lines repeats: debug only
            reported = self.hook_reports_bad_files and _in_worker()
            print_log(
                f'Skipping bad image file {path}: {reason}',
                'current',
                level=10 if reported else 30,
            )
        checked = len(self._bad) + self._n_good
        if (
            checked >= min(self.min_checked, len(self))
            and len(self._bad) > self.max_bad_ratio * checked
        ):
            first = '\n'.join(
                f'  {self._paths[i]}: {r}'
                for i, r in list(self._bad.items())[:5]
            )
            raise RuntimeError(
                f'{len(self._bad)} of {checked} image files read are bad, '
                f'more than max_bad_ratio={self.max_bad_ratio}. First ones:'
                f'\n{first}\nRun tools/misc/check_dataset.py to list them '
                'all, or raise max_bad_ratio.'
            )

    def __getitem__(self, idx: int) -> dict:
        if not self._fully_initialized:
            self.full_init()
        n = len(self)
        skipped = []
        j = int(idx)
        for k in range(self.max_refetch + 1):
            j = (int(idx) + k * 7919) % n
            path = self._paths[j]
            if j in self._bad:
                skipped.append((path, self._bad[j]))
                continue
            try:
                data = self.prepare_data(j)
            except BAD_FILE_ERRORS as e:
                reason = (
                    getattr(e, 'reason', None) or f'{type(e).__name__}: {e}'
                )
                skipped.append((path, reason))
                self._record_bad(j, path, reason)
                continue
            if data is None:
                skipped.append((path, 'pipeline returned None'))
                self._record_bad(j, path, 'pipeline returned None')
                continue
            self._n_good += 1
            if isinstance(data, dict) and hasattr(
                data.get('data_samples'), 'set_metainfo'
            ):
                data['data_samples'].set_metainfo(
                    dict(skipped_files=skipped, source=int(self._sources[j]))
                )
            return data
        raise RuntimeError(
            f'Cannot find a readable image for index {idx} after '
            f'{self.max_refetch + 1} tries; last: {skipped[-3:]}'
        )
