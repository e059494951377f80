# MixMIM (Liu et al. 2023, https://arxiv.org/abs/2205.13137) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a 4-stage MixMIM transformer (32 dims) on digits upsampled to 64 px, 4 epochs on CPU, then a kNN evaluation on
# data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/mixmim/mixmim_mixmim-tiny_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_single_view_64px.py',
    '../_base_/schedules/mim_demo_4e.py',
]

model = dict(
    type='MixMIM',
    data_preprocessor={{_base_.data_preprocessor}},
    backbone=dict(
        type='MixMIMPretrainTransformer',
        arch=dict(embed_dims=32, depths=[1, 1, 1, 1], num_heads=[1, 2, 4, 8]),
        img_size=64,
        patch_size=4,
        window_size=[8, 8, 4, 2],
        mask_ratio=0.5,
    ),
    neck=dict(
        type='MixMIMPretrainDecoder',
        num_patches=4,
        encoder_stride=32,
        embed_dim='auto',
        decoder_embed_dim=64,
        decoder_depth=2,
        decoder_num_heads=4,
    ),
    head=dict(
        type='MixMIMPretrainHead',
        norm_pix=True,
        patch_size=32,
        loss=dict(type='PixelReconstructionLoss', criterion='L2'),
    ),
)

optim_wrapper = dict(optimizer=dict(lr=0.0015))
