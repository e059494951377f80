# DINOv3 stage 3 of 3: high-resolution adaptation. Starts from the full
# stage-2 checkpoint by one key (model.warm_start) and trains 10 epochs on
# a mixed-resolution loader: each batch draws one (global, local) crop-size
# pair, 224/96 for half of the batches, 384/128 for 30%, 512/192 for 20%
# (DINOv3 mixes 512 and 768 global crops on ViT-7B; these sizes fit a
# ViT-S on one GPU at batch 32). The RoPE backbone takes every size without
# interpolation; the iBOT masks follow each batch's patch grid. Gram
# anchoring stays on, with the Gram teacher on the global crops themselves.
#   python tools/train.py configs/dinov3/dinov3_vit-s16_1xb64-100e_highres_custom.py \
#       --work-dir work_dirs/dinov3_vit-s16_1xb64-100e_highres_custom \
#       --cfg-options train_dataloader.dataset.dataset.data_root=/data/my_images
_base_ = './dinov3_vit-s16_1xb64-100e_gram_custom.py'
_stage2 = 'work_dirs/dinov3_vit-s16_1xb64-100e_gram_custom/epoch_30.pth'
_batch = 32

train_pipeline = [
    dict(type='LoadImageRobust', max_side=None),
    dict(
        type='MixedResolutionMultiCrop',
        global_sizes=[224, 384, 512],
        local_sizes=[96, 128, 192],
        num_global_crops=2,
        num_local_crops=8,
        global_scale=(0.32, 1.0),
        local_scale=(0.05, 0.32),
        flip_prob=0.0,
    ),
    dict(
        type='PackInputs',
        meta_keys=('sample_idx', 'img_path', 'num_global_crops', 'source'),
    ),
]
train_dataloader = dict(
    _delete_=True,
    batch_size=_batch,
    num_workers=8,
    persistent_workers=True,
    pin_memory=True,
    drop_last=False,  # required with a batch_sampler; it drops by itself
    sampler=dict(type='DefaultSampler', shuffle=True),
    batch_sampler=dict(
        type='MixedResolutionBatchSampler', ratios=[0.5, 0.3, 0.2]
    ),
    collate_fn=dict(
        type='mmssl.block_mask_collate',
        patch_size=16,
        mask_ratio=(0.1, 0.5),
        mask_prob=0.5,
    ),
    dataset=dict(
        type='MixedResolutionDataset',
        dataset=dict(
            type='ImageFolderDataset',
            data_root='data/custom',
            cache_file=None,
            max_bad_ratio=0.05,
            pipeline=train_pipeline,
        ),
    ),
)
model = dict(
    warm_start=dict(checkpoint=_stage2, format='mmssl_full'),
    num_gram_crops=0,  # the Gram teacher sees the global crops
)
optim_wrapper = dict(optimizer=dict(lr=0.004 * (_batch / 1024) ** 0.5))
train_cfg = dict(max_epochs=10)
auto_scale_lr = dict(base_batch_size=_batch, rule='sqrt')
