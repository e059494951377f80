# The ViT-S/16 fine-tuning recipe on your own labelled folders:
# <data_root>/train/<class>/<image> and <data_root>/val/<class>/<image>,
# the same class sub-folders in both; any image format, bit depth and size
# (LoadImageRobust; bad files are skipped and named). Set the number of
# classes in both places:
#   python tools/train.py \
#       configs/benchmarks/finetune/finetune_vit-small-p16_8xb128-coslr-100e_custom.py \
#       --cfg-options model.init_cfg.checkpoint=CKPT \
#       train_dataloader.dataset.data_root=/data/mine/train \
#       val_dataloader.dataset.data_root=/data/mine/val \
#       model.head.num_classes=5 model.data_preprocessor.num_classes=5
# Few labels: wrap the training set in a LabelSubset as the -1pct and
# -10pct configs do (docs/en/finetune.md).
_base_ = ['./finetune_vit-small-p16_8xb128-coslr-100e_in1k.py']

data_root = 'data/custom'
# ImageFolderDataset turns LoadImageFromFile into LoadImageRobust
_train_pipeline = {{_base_.train_pipeline}}
_test_pipeline = {{_base_.test_pipeline}}
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
