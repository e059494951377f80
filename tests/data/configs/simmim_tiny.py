# A tiny SimMIM (Swin, 32 px images, window 2) for tool tests.
_base_ = ['../../../configs/_base_/default_runtime.py']

model = dict(
    type='SimMIM',
    data_preprocessor=dict(
        type='SelfSupDataPreprocessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        to_rgb=True,
    ),
    backbone=dict(
        type='SimMIMSwinTransformer',
        arch=dict(embed_dims=16, depths=[1, 1], num_heads=[2, 2]),
        img_size=32,
        out_indices=(1,),
        stage_cfgs=dict(block_cfgs=dict(window_size=2)),
    ),
    neck=dict(type='SimMIMLinearDecoder', in_channels=32, encoder_stride=8),
    head=dict(
        type='SimMIMHead',
        patch_size=4,
        loss=dict(type='PixelReconstructionLoss', criterion='L1', channel=3),
    ),
)
