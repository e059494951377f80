# Linear probe of a frozen ViT-S/14 on your own labelled folders:
# <data_root>/train/<class>/<image> and <data_root>/val/<class>/<image>,
# the same class sub-folders in both. Any image format, bit depth and
# size (LoadImageRobust; bad files are skipped and named). Set the number
# of classes in both places:
#   python tools/train.py \
#       configs/benchmarks/linear_probe/linear_vit-small-p14_1xb64-coslr-100e_custom.py \
#       --cfg-options model.backbone.init_cfg.checkpoint=CKPT \
#       train_dataloader.dataset.data_root=/data/mine/train \
#       val_dataloader.dataset.data_root=/data/mine/val \
#       model.head.num_classes=5 model.data_preprocessor.num_classes=5
_base_ = ['./linear_vit-small-p14_8xb128-coslr-100e_in1k.py']

data_root = 'data/custom'
_train_pipeline = [
    dict(type='LoadImageRobust'),
    dict(type='RandomResizedCrop', scale=224, interpolation='bicubic'),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackInputs'),
]
_test_pipeline = [
    dict(type='LoadImageRobust'),
    dict(type='ResizeEdge', scale=256, edge='short', interpolation='bicubic'),
    dict(type='CenterCrop', crop_size=224),
    dict(type='PackInputs'),
]
# train and val: one labelled image folder, two splits
__folder = dict(_delete_=True, type='ImageFolderDataset', with_label=True)
train_dataloader = dict(
    batch_size=64,
    num_workers=4,
    dataset=dict(
        __folder, data_root=data_root + '/train', pipeline=_train_pipeline
    ),
)
val_dataloader = dict(
    batch_size=64,
    num_workers=4,
    dataset=dict(
        __folder, data_root=data_root + '/val', pipeline=_test_pipeline
    ),
)
test_dataloader = val_dataloader
model = dict(data_preprocessor=dict(num_classes=2), head=dict(num_classes=2))
# lr 0.1 at batch 1024, scaled with --auto-scale-lr
auto_scale_lr = dict(base_batch_size=1024)
