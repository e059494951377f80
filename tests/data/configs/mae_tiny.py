# A tiny MAE (ViT patch 4 on 32 px images, norm_pix targets) for tool tests.
_base_ = ['../../../configs/_base_/default_runtime.py']

model = dict(
    type='MAE',
    data_preprocessor=dict(
        type='SelfSupDataPreprocessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        to_rgb=True,
    ),
    backbone=dict(
        type='MAEViT',
        arch=dict(
            embed_dims=32, num_layers=2, num_heads=4, feedforward_channels=64
        ),
        img_size=32,
        patch_size=4,
        mask_ratio=0.75,
    ),
    neck=dict(
        type='MAEPretrainDecoder',
        num_patches=64,
        patch_size=4,
        in_chans=3,
        embed_dim=32,
        decoder_embed_dim=32,
        decoder_depth=1,
        decoder_num_heads=4,
        mlp_ratio=2.0,
    ),
    head=dict(
        type='MAEPretrainHead',
        norm_pix=True,
        patch_size=4,
        loss=dict(type='PixelReconstructionLoss', criterion='L2'),
    ),
)
