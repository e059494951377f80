"""Unlabelled 3D volumes from folders or MONAI-style JSON datalists."""

import os.path as osp
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from mmengine.dataset import Compose

from mmssl.extras import require_3d
from mmssl.registry import DATASETS

from .image_folder import ImageFolderDataset
from .path_table import PathTable
from .volume_cache import DiskCache, ShardedMemoryCache

VOLUME_EXTENSIONS = ('.nii', '.nii.gz', '.npy')


@DATASETS.register_module()
class VolumeFolderDataset(ImageFolderDataset):
    """3D volumes (NIfTI ``.nii``/``.nii.gz``, ``.npy``) for pretraining.

    The samples are every volume file under ``data_root`` (recursive,
    sorted, as :class:`ImageFolderDataset`), or the ``image`` entries of a
    MONAI-style datalist ``ann_file`` (``{"training": [{"image": ...},
    ...]}``, read by MONAI's ``load_decathlon_datalist``; relative paths are
    relative to ``data_root`` or else to the JSON's folder).

    Each sample runs ``preprocess`` (the deterministic steps: loading,
    orientation, spacing, intensity scaling), whose output may be cached,
    then ``pipeline`` (the random ones: multi-crop, masks, packing). Bad
    or truncated volumes are skipped and named with the policy of the 2D
    datasets (see :class:`ImageFolderDataset`: ``max_bad_ratio``,
    ``skipped_files``).

    Caching never holds a copy per rank:

    * ``cache='memory'``: each rank keeps only the files with index
      ``i % world_size == rank``, at most ``cache_max_gb`` per process;
    * ``cache='disk'``: one ``.npy`` per volume in ``cache_dir``, keyed by
      the file (path, size, mtime) and the ``preprocess`` transforms,
      shared by all ranks (and by later runs).

    Args:
        data_root (str | list[str], optional): Folder(s), or the base of
            the datalist's relative paths.
        ann_file (str, optional): A ``.json`` datalist, or a text list as
            in :class:`ImageFolderDataset`.
        preprocess (list): Deterministic steps; usually starts with
            ``dict(type='LoadVolume')``.
        pipeline (list): Random steps run on every access.
        datalist_key (str): Key of the datalist's list. Defaults to
            ``'training'``.
        cache (str, optional): ``None``, ``'memory'`` or ``'disk'``.
        cache_dir (str, optional): Folder of the disk cache.
        cache_max_gb (float): Memory cache cap per process. Defaults to 8.
        cache_shard (bool): Memory cache keeps only this rank's share.
            Defaults to True.
        **kwargs: :class:`ImageFolderDataset` arguments
            (``max_bad_ratio``, ``indices``, ``cache_file`` for the index,
            ...).
    """

    def __init__(
        self,
        data_root: Union[str, Sequence[str], None] = None,
        ann_file: Optional[str] = None,
        preprocess: Sequence = (),
        pipeline: Sequence = (),
        datalist_key: str = 'training',
        extensions: Sequence[str] = VOLUME_EXTENSIONS,
        cache: Optional[str] = None,
        cache_dir: Optional[str] = None,
        cache_max_gb: float = 8.0,
        cache_shard: bool = True,
        lazy_init: bool = False,
        **kwargs,
    ) -> None:
        require_3d('VolumeFolderDataset')
        self.datalist_key = datalist_key
        self.preprocess = Compose(list(preprocess))
        if cache not in (None, 'memory', 'disk'):
            raise ValueError(
                f"cache must be None, 'memory' or 'disk', got {cache!r}."
            )
        if cache and not preprocess:
            raise ValueError(
                'cache needs preprocess=[dict(type="LoadVolume"), ...]: '
                'only the preprocess steps are cached.'
            )
        if cache == 'disk':
            if not cache_dir:
                raise ValueError("cache='disk' needs cache_dir=FOLDER.")
            # the configs (dicts), not the objects: their repr holds ids
            self.cache = DiskCache(cache_dir, repr(list(preprocess)))
        elif cache == 'memory':
            self.cache = ShardedMemoryCache(cache_max_gb * 2**30, cache_shard)
        else:
            self.cache = None
        super().__init__(
            data_root=data_root,
            ann_file=ann_file,
            pipeline=pipeline,
            extensions=extensions,
            lazy_init=True,
            **kwargs,
        )
        if not lazy_init:
            self.full_init()

    # ------------------------------------------------------------------ #
    def _build_index(self) -> Tuple[dict, list]:
        if not (self.ann_file and self.ann_file.lower().endswith('.json')):
            return super()._build_index()
        from monai.data import load_decathlon_datalist

        base = self.roots[0] if self.roots else osp.dirname(self.ann_file)
        items = load_decathlon_datalist(
            self.ann_file,
            is_segmentation=False,
            data_list_key=self.datalist_key,
            base_dir=base,
        )
        paths: List[str] = []
        for item in items:
            image = item['image'] if isinstance(item, dict) else item
            if not isinstance(image, str):
                raise ValueError(
                    f'{self.ann_file}: "image" must be one path per entry, '
                    f'got {image!r}.'
                )
            paths.append(image)
        n = len(paths)
        index = dict(
            paths=PathTable(paths),
            labels=np.full(n, -1, np.int32),
            sources=np.zeros(n, np.int16),
            classes=[],
        )
        return index, []

    def _preprocessed(self, idx: int, info: dict) -> dict:
        path = info['img_path']
        if self.cache is not None:
            img = self.cache.get(idx, path)
            if img is not None:
                shape = tuple(img.shape[1:])
                return dict(info, img=img, img_shape=shape, ori_shape=shape)
        results = self.preprocess(info)
        if results is None:
            return None
        if self.cache is not None:
            img = results['img']
            img = img.as_tensor() if hasattr(img, 'as_tensor') else img
            self.cache.put(idx, path, torch.as_tensor(img))
        return results

    def prepare_data(self, idx: int):
        """``preprocess`` (cached) then ``pipeline`` for one volume."""
        results = self._preprocessed(idx, self.get_data_info(idx))
        if results is None:
            return None
        return self.pipeline(results)


__all__ = ['VolumeFolderDataset', 'VOLUME_EXTENSIONS']
