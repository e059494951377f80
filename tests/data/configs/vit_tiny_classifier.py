# A tiny ViT (patch 4 on 32 px images) inside MoCo v3, for tool tests.
_base_ = ['../../../configs/_base_/default_runtime.py']

model = dict(
    type='MoCoV3',
    base_momentum=0.01,
    data_preprocessor=dict(
        type='SelfSupDataPreprocessor',
        mean=[33.0, 33.0, 33.0],
        std=[60.0, 60.0, 60.0],
        to_rgb=True,
    ),
    backbone=dict(
        type='VisionTransformer',
        arch=dict(
            embed_dims=32, num_layers=2, num_heads=4, feedforward_channels=64
        ),
        img_size=32,
        patch_size=4,
        out_type='cls_token',
    ),
    neck=dict(
        type='NonLinearNeck',
        in_channels=32,
        hid_channels=32,
        out_channels=16,
        num_layers=2,
        with_avg_pool=False,
    ),
    head=dict(
        type='MoCoV3Head',
        predictor=dict(
            type='NonLinearNeck',
            in_channels=16,
            hid_channels=32,
            out_channels=16,
            num_layers=2,
            with_avg_pool=False,
        ),
        loss=dict(type='CrossEntropyLoss', loss_weight=2.0),
        temperature=0.2,
    ),
)
