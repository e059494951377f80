# DINOv2-style multi-crop pretraining data over any folder(s) of images
# (Caron et al. 2021, https://arxiv.org/abs/2104.14294; Oquab et al. 2023,
# https://arxiv.org/abs/2304.07193). All a user types:
#   --cfg-options train_dataloader.dataset.data_root=/data/eyes
# or a list: "train_dataloader.dataset.data_root=['/data/a','/data/b']".
# Output per sample: inputs = 2 x (3, 224, 224) + 8 x (3, 96, 96) uint8 BGR
# tensors, data_sample.mask = (2, 224 // 14, 224 // 14) iBOT masks.
# See docs/en/custom_dataset.md.
_base_ = './multicrop_224px/dinov2_masked.py'

data_root = 'data/custom'
_patch_size = 14
# 2 x 224 px global crops (scale 0.32-1), 8 x 96 px local ones (0.05-0.32),
train_dataloader = dict(
    batch_size=64,
    num_workers=8,
    persistent_workers=True,  # also keeps augmentations varying per epoch
    pin_memory=True,
    drop_last=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type='ImageFolderDataset',
        data_root=data_root,
        cache_file=None,
        max_bad_ratio=0.05,
        pipeline=_base_.train_pipeline,
    ),
)
custom_hooks = [dict(type='BadFileSummaryHook', interval=50)]
