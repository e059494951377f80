# DINO on the bundled 32x32 demo digits (CPU, tools/misc/make_demo_dataset.py
# data/demo): the DINOv2 demo's tiny ViT, data and schedule (batch 64, 3
# epochs, 2 global crops), with DINO's loss only (EMA centring, no masks, no
# KoLeo), teacher temperature fixed at 0.04 and a normalised last layer.
#   python tools/train.py configs/dino/dino_vit-tiny-p8_1xb64-3e_demo.py
_base_ = '../dinov2/dinov2_vit-tiny-p8_1xb64-3e_demo.py'

n_prototypes = 256
train_pipeline = [
    dict(type='LoadImageRobust'),
    dict(
        type='MultiCrop',
        num_global_crops=2,
        num_local_crops=0,
        global_size=32,
        local_size=16,
        global_scale=(0.4, 1.0),
        local_scale=(0.1, 0.4),
        blur_kernel_size=3,
    ),
    dict(type='PackInputs'),
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
model = dict(
    _delete_=True,
    type='DINO',
    data_preprocessor=dict(
        type='SelfSupDataPreprocessor',
        mean=[33.0, 33.0, 33.0],
        std=[60.0, 60.0, 60.0],
        to_rgb=True,
    ),
    num_global_crops=2,
    backbone=dict(
        type='DINOVisionTransformer',
        arch=dict(
            embed_dims=64, num_layers=4, num_heads=4, feedforward_channels=256
        ),
        img_size=32,
        patch_size=8,
        layer_scale_init_value=0.0,
        out_type='raw',
    ),
    head=dict(
        type='DINOHead',
        in_channels=64,
        n_prototypes=n_prototypes,
        hidden_channels=256,
        bottleneck_channels=64,
        norm_last_layer=True,
    ),
    loss=dict(type='DINOLoss', out_dim=n_prototypes, centering='centering'),
)
custom_hooks = [
    dict(type='TeacherEMAHook', momentum=0.98, end_momentum=1.0),
    dict(
        type='TeacherTempWarmupHook',
        warmup_temp=0.04,
        temp=0.04,
        warmup_epochs=0,
    ),
    dict(type='FreezeLastLayerHook', freeze_epochs=1),
]
