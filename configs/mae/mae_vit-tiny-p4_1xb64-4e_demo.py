# MAE (He et al. 2022, https://arxiv.org/abs/2111.06377) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a 4-layer ViT (96 dims, 4 px patches), 4 epochs on CPU, then a kNN evaluation on
# data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/mae/mae_vit-tiny-p4_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_single_view.py',
    '../_base_/schedules/mim_demo_4e.py',
]

# a ViT-tiny-ish encoder: 64 tokens of 4x4 px on 32 px images
_vit_arch = dict(
    embed_dims=96, num_layers=4, num_heads=3, feedforward_channels=384
)

model = dict(
    type='MAE',
    data_preprocessor={{_base_.data_preprocessor}},
    backbone=dict(
        type='MAEViT',
        arch=_vit_arch,
        img_size=32,
        patch_size=4,
        mask_ratio=0.75,
    ),
    neck=dict(
        type='MAEPretrainDecoder',
        num_patches=64,
        patch_size=4,
        embed_dim='auto',
        decoder_embed_dim=64,
        decoder_depth=2,
        decoder_num_heads=4,
        mlp_ratio=4,
    ),
    head=dict(
        type='MAEPretrainHead',
        norm_pix=True,
        patch_size=4,
        loss=dict(type='PixelReconstructionLoss', criterion='L2'),
    ),
)

optim_wrapper = dict(optimizer=dict(lr=0.0015))
