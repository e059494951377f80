# DINOv3 (https://arxiv.org/abs/2508.10104) on the bundled 32x32 demo
# digits (tools/misc/make_demo_dataset.py data/demo), on CPU: a 4-block
# DINOv3ViT (RoPE, one register token) of width 64 with 4-pixel patches
# (64 tokens), 2 global 32x32 + 4 local 16x16 crops without flips, DINO
# CLS + iBOT (batch-level masks, block_mask_collate) + KoLeo, and Gram
# anchoring in the second half (the Gram teacher is a snapshot of the EMA
# teacher taken at iteration 110, refreshed at 165); constant lr after the
# warm-up and a constant teacher momentum, as DINOv3. kNN top-1 on
# data/demo/val at the end. Small-data choices: 10 epochs (220
# iterations), lr 1e-3, teacher temperature 0.04, momentum 0.99, and no
# LayerScale (see the DINOv2 demo's header).
#   python tools/train.py configs/dinov3/dinov3_vit-tiny-p4_1xb64-10e_demo.py
_base_ = [
    '../_base_/datasets/demo_knn.py',
    '../_base_/default_runtime.py',
]

_patch_size = 4
_n_prototypes = 256

train_pipeline = [
    dict(type='LoadImageRobust'),
    dict(
        type='MultiCrop',
        num_global_crops=2,
        num_local_crops=4,
        global_size=32,
        local_size=16,
        global_scale=(0.4, 1.0),
        local_scale=(0.1, 0.4),
        blur_kernel_size=3,
        flip_prob=0.0,  # DINOv3: no horizontal flip
    ),
    dict(type='PackInputs'),
]
train_dataloader = dict(
    batch_size=64,
    num_workers=2,
    persistent_workers=True,
    drop_last=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(
        type='mmssl.block_mask_collate',
        patch_size=_patch_size,
        mask_ratio=(0.1, 0.5),
        mask_prob=0.5,
    ),
    dataset=dict(
        type='ImageFolderDataset',
        data_root='data/demo/train',
        pipeline=train_pipeline,
    ),
)

_head = dict(
    type='DINOHead',
    in_channels='auto',  # the backbone's width
    n_prototypes=_n_prototypes,
    hidden_channels=256,
    bottleneck_channels=64,
    norm_last_layer=False,
)
model = dict(
    type='DINOFamily',
    data_preprocessor=dict(
        type='SelfSupDataPreprocessor',
        mean=[33.0, 33.0, 33.0],
        std=[60.0, 60.0, 60.0],
        to_rgb=True,
    ),
    num_global_crops=2,
    backbone=dict(
        type='DINOv3ViT',
        arch=dict(
            embed_dims=64, num_layers=4, num_heads=4, feedforward_channels=256
        ),
        patch_size=_patch_size,
        num_register_tokens=1,
        layer_scale_init_value=0.0,  # see the header
        drop_path_rate=0.0,
        out_type='raw',
    ),
    head=_head,
    patch_head=_head,  # DINOv3: a separate iBOT head
    terms=dict(
        dino_cls=dict(
            type='DINOLoss', out_dim=_n_prototypes, centering='sinkhorn_knopp'
        ),
        ibot_patch=dict(
            type='iBOTPatchLoss',
            out_dim=_n_prototypes,
            centering='sinkhorn_knopp',
        ),
        koleo=dict(type='KoLeoLoss', weight=0.1),
        gram=dict(type='GramLoss', weight=1.0),
    ),
)

optim_wrapper = dict(
    type='NaNGuardOptimWrapper',
    max_consecutive_skips=10,
    optimizer=dict(
        type='AdamW', lr=1e-3, betas=(0.9, 0.999), weight_decay=0.04
    ),
    clip_grad=dict(max_norm=3.0),
    constructor='LayerDecayOptimWrapperConstructor',
    paramwise_cfg=dict(
        layer_decay_rate=0.9,
        flat_decay_mult=0.0,
        custom_keys={'patch_embed': dict(lr_mult=0.2)},
    ),
)
# DINOv3: warm-up, then constant lr and weight decay
param_scheduler = [
    dict(
        type='LinearLR',
        start_factor=1e-3,
        by_epoch=True,
        begin=0,
        end='10%',
        convert_to_iter_based=True,
    ),
]
custom_hooks = [
    dict(type='TeacherEMAHook', momentum=0.99, end_momentum=0.99),
    dict(
        type='TeacherTempWarmupHook',
        warmup_temp=0.04,
        temp=0.04,
        warmup_epochs=0,
        by_epoch=False,
    ),
    dict(type='FreezeLastLayerHook', freeze_epochs='10%'),
    dict(type='GramTeacherHook', first_update=110, period=55, max_updates=2),
]
# Every length above and below is a fraction of the run (docs/en/config.md)
train_cfg = dict(
    type='EpochBasedTrainLoop', max_epochs=10, val_interval='100%'
)
auto_scale_lr = dict(base_batch_size=64, rule='sqrt')
default_hooks = dict(
    logger=dict(interval=10),
    checkpoint=dict(interval='100%', max_keep_ckpts=1),
)
randomness = dict(seed=0)
