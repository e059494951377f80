# Weighted kNN of a frozen ViT-S/14 on your own labelled folders:
# <data_root>/train/<class>/<image> is the feature bank, <data_root>/val/
# <class>/<image> the queries; both need the same class sub-folders. Any
# image format, bit depth and size (LoadImageRobust; bad files are
# skipped and named), short side resized to 256, centre 224 crop.
#   python tools/misc/knn_eval.py configs/benchmarks/knn/knn_vit-small-p14_custom.py \
#       --checkpoint CKPT --train-folder /data/mine/train --val-folder /data/mine/val
# (knn_eval.py labels the val folder with the train folder's classes and
# loads any checkpoint: a training checkpoint's teacher, a published
# backbone, ...). With tools/test.py:
#   python tools/test.py configs/benchmarks/knn/knn_vit-small-p14_custom.py \
#       CKPT --cfg-options \
#       test_dataloader.dataset.bank.data_root=/data/mine/train \
#       test_dataloader.dataset.query.data_root=/data/mine/val
_base_ = ['./knn_vit-small-p14_in1k.py']

_folder_pipeline = [
    dict(type='LoadImageRobust'),
    dict(type='ResizeEdge', scale=256, edge='short', interpolation='bicubic'),
    dict(type='CenterCrop', crop_size=224),
    dict(type='PackInputs'),
]
test_dataloader = dict(
    batch_size=64,
    num_workers=4,
    dataset=dict(
        _delete_=True,
        type='KNNDataset',
        bank=dict(
            type='ImageFolderDataset',
            data_root='data/custom/train',
            with_label=True,
            pipeline=_folder_pipeline,
        ),
        query=dict(
            type='ImageFolderDataset',
            data_root='data/custom/val',
            with_label=True,
            pipeline=_folder_pipeline,
        ),
    ),
)
