"""Evaluation datasets over any folder of images, read like training.

The tools (kNN, t-SNE, browse, attention, reconstruction) read images with
the training decoder :class:`mmssl.datasets.transforms.LoadImageRobust`
(8/16-bit, grey, RGBA, palette, EXIF orientation), skip bad files naming
them, and bring images of any size to one size by a short-side resize and
a centre crop, so batches of mixed sizes stack and nothing is squashed.
"""

import copy
import os
import os.path as osp
from typing import List, Optional, Sequence, Tuple

from mmssl.datasets.image_index import IMG_EXTENSIONS

#: The crop side of each training transform that sets the input size.
_CROP_KEYS = {
    'MultiCrop': 'global_size',
    'MultiCrop3D': 'global_size',
    'RandomResizedCrop': 'scale',
    'RandomResizedCropAndInterpolationWithTwoPic': 'size',
    'RandomCrop': 'crop_size',
    'CenterCrop': 'crop_size',
}


def _side(value) -> Optional[int]:
    if isinstance(value, (list, tuple)) and value:
        value = value[0]
    return int(value) if isinstance(value, (int, float)) else None


#: Dataset and transform types of volume (3D) data: the 2D evaluation
#: pipeline cannot read them.
VOLUME_TYPES = (
    'VolumeFolderDataset',
    'LoadVolume',
    'MONAITransform',
    'MultiCrop3D',
)


def config_types(cfg) -> List[str]:
    """Every ``type`` name inside a (nested) config."""
    found = []
    if isinstance(cfg, dict):
        kind = cfg.get('type')
        if kind is not None:
            found.append(kind if isinstance(kind, str) else kind.__name__)
        for value in cfg.values():
            found += config_types(value)
    elif isinstance(cfg, (list, tuple)):
        for item in cfg:
            found += config_types(item)
    return found


def volume_types(dataset_cfg) -> List[str]:
    """The volume (3D) types a dataset config uses, sorted; [] for 2D."""
    return sorted(set(config_types(dataset_cfg)) & set(VOLUME_TYPES))


def train_dataset_cfg(cfg) -> dict:
    """The config's training dataset that holds the pipeline: through
    wrappers (``dataset``) and mixtures (the first of ``datasets``)."""
    dataset = (cfg.get('train_dataloader') or {}).get('dataset') or {}
    while 'pipeline' not in dataset:
        inner = dataset.get('dataset') or (dataset.get('datasets') or [0])[0]
        if not isinstance(inner, dict):
            break
        dataset = inner
    return dataset


def train_crop_size(cfg) -> Optional[int]:
    """The side of the crops the config trains on: the first size-setting
    transform of its training pipeline, nested ones (``MultiView``)
    included (in a wrapper's ``dataset`` or a mixture's first of
    ``datasets``); None if there is none."""
    dataset = train_dataset_cfg(cfg)

    def search(transforms) -> Optional[int]:
        for t in transforms or []:
            if isinstance(t, (list, tuple)):
                found = search(t)
            elif not isinstance(t, dict):
                continue
            elif t.get('type') in _CROP_KEYS:
                found = _side(t.get(_CROP_KEYS[t['type']]))
            else:
                found = search(t.get('transforms') or t.get('pipelines'))
            if found:
                return found
        return None

    return search(dataset.get('pipeline'))


def eval_img_size(cfg, requested: Optional[int] = None) -> Tuple[int, str]:
    """The crop side a tool evaluates ``cfg``'s backbone at, and where it
    comes from: ``requested`` (a flag), the backbone's ``img_size`` (a
    ViT), the training crop (:func:`train_crop_size`, e.g. 32 for the
    ResNet demos on the 32 px digits), else 224."""
    if requested:
        return int(requested), 'as requested'
    size = _side((cfg.model.get('backbone') or {}).get('img_size'))
    if size:
        return size, "the backbone's img_size"
    size = train_crop_size(cfg)
    if size:
        return size, 'the training crop of the config'
    return 224, 'default; the config gives no input size'


def volume_eval_pipeline(size: int) -> List[dict]:
    """The evaluation pipeline of a volume that the training dataset's
    ``preprocess`` loaded (and resampled): its centre ``size`` cubed,
    zero-padded where the volume is smaller, as a plain tensor."""
    return [
        dict(
            type='MONAITransform',
            transform='ResizeWithPadOrCropd',
            keys='img',
            spatial_size=(size, size, size),
        ),
        dict(
            type='MONAITransform',
            transform='EnsureTyped',
            keys='img',
            track_meta=False,
        ),
        dict(type='PackInputs'),
    ]


def volume_eval_dataset(
    train: dict, size: int, folder: Optional[str] = None
) -> dict:
    """The training volume dataset config ``train`` read for evaluation:
    its type, loading ``preprocess`` and files (every volume of
    ``folder`` instead, when given), then :func:`volume_eval_pipeline`;
    unlabelled, its disk cache shared with training and no memory cache
    (that would hold a second copy of the data)."""
    keep = ['type', 'preprocess', 'extensions', 'datalist_key']
    if folder is None:
        keep += ['data_root', 'ann_file', 'max_bad_ratio', 'min_checked']
    out = {k: copy.deepcopy(train[k]) for k in keep if k in train}
    if train.get('cache') == 'disk':
        out.update(cache='disk', cache_dir=train.get('cache_dir'))
    if folder is not None:
        out.update(data_root=folder, max_bad_ratio=1.0)
    out.update(pipeline=volume_eval_pipeline(size), with_label=False)
    return out


def eval_pipeline(
    img_size: int = 224,
    crop_ratio: float = 224 / 256,
    loader: Optional[dict] = None,
):
    """Decode robustly, resize the short side, centre-crop, pack.

    Args:
        img_size (int): Side of the square crop.
        crop_ratio (float): Crop side / resized short side (0.875 as in
            the usual 256 -> 224 protocol).
        loader (dict, optional): The loading transform; default
            ``LoadImageRobust`` (see :func:`config_loader` for a
            config's multi-channel loader).

    Returns:
        list[dict]: Transform configs.
    """
    return [
        dict(loader or dict(type='LoadImageRobust')),
        dict(
            type='ResizeEdge',
            scale=max(img_size, round(img_size / crop_ratio)),
            edge='short',
            interpolation='bicubic',
        ),
        dict(type='CenterCrop', crop_size=img_size),
        dict(
            type='PackInputs',
            meta_keys=('sample_idx', 'img_path', 'ori_shape', 'img_shape'),
        ),
    ]


def config_loader(cfg) -> Optional[dict]:
    """The multi-channel loader of a config's pipelines, if it has one.

    A model trained on C-channel TIFFs must read folders the same way
    (channels, layout, scaling), not with the RGB loader.

    Args:
        cfg: The config (``train_dataloader``/``test_dataloader`` are
            searched).

    Returns:
        dict | None: A copy of the ``LoadMultiChannelTiff`` config.
    """
    from mmssl.datasets.transforms.rgb_only import (
        MULTI_CHANNEL_LOADERS,
        iter_transform_cfgs,
    )

    for key in ('test_dataloader', 'train_dataloader'):
        loader = cfg.get(key) or {}
        for t in iter_transform_cfgs(dict(loader).get('dataset') or {}):
            kind = t.get('type')
            if isinstance(kind, str) and kind in MULTI_CHANNEL_LOADERS:
                return dict(t)
    return None


def folder_classes(root: str) -> List[str]:
    """Sorted names of the sub-folders of ``root`` that hold an image.

    Raises:
        FileNotFoundError: ``root`` is not a folder or has no such
            sub-folder (labels come from sub-folder names).
    """
    if not osp.isdir(root):
        raise FileNotFoundError(f'{root} is not a folder.')
    exts = tuple(IMG_EXTENSIONS)
    found = []
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        if not entry.is_dir() or entry.name.startswith('.'):
            continue
        for _, _, files in os.walk(entry.path):
            if any(f.lower().endswith(exts) for f in files):
                found.append(entry.name)
                break
    if not found:
        raise FileNotFoundError(
            f'{root} has no sub-folder with images: a labelled folder is '
            '<root>/<class>/<image>, one sub-folder per class.'
        )
    return found


def labelled_folder_dataset(
    root: str,
    img_size: int = 224,
    classes: Optional[Sequence[str]] = None,
    pipeline: Optional[list] = None,
) -> dict:
    """Config of an :class:`ImageFolderDataset` over ``<root>/<class>/*``.

    Bad files are skipped and named (``max_bad_ratio=1``: a tool does
    not stop on them).

    Args:
        root (str): The folder.
        img_size (int): Crop side of the default pipeline.
        classes (Sequence[str], optional): Class names in label order;
            default: the sub-folders of ``root``
            (:func:`folder_classes`). Give the train folder's classes to
            label a val folder the same way.
        pipeline (list, optional): Transforms; default
            :func:`eval_pipeline`.

    Returns:
        dict: The dataset config.
    """
    return dict(
        type='ImageFolderDataset',
        data_root=root,
        with_label=True,
        max_bad_ratio=1.0,
        metainfo=dict(classes=list(classes or folder_classes(root))),
        pipeline=pipeline or eval_pipeline(img_size),
    )


def unlabelled_folder_dataset(
    roots: Sequence[str], img_size: int = 224, pipeline=None
) -> dict:
    """Config of an :class:`ImageFolderDataset` over every image below
    ``roots`` (labels -1), with :func:`eval_pipeline` by default."""
    return dict(
        type='ImageFolderDataset',
        data_root=list(roots),
        max_bad_ratio=1.0,
        pipeline=pipeline or eval_pipeline(img_size),
    )
