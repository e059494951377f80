# MFF (Liu et al. 2023, https://arxiv.org/abs/2303.16156) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a 4-layer ViT (96 dims, 4 px patches), 4 epochs on CPU, then a kNN evaluation on
# data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/mff/mff_vit-tiny-p4_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_single_view.py',
    '../_base_/default_runtime.py',
]

# a ViT-tiny-ish encoder: 64 tokens of 4x4 px on 32 px images
vit_arch = dict(
    embed_dims=96, num_layers=4, num_heads=3, feedforward_channels=384
)

model = dict(
    type='MFFFullImage',  # MFF + whole-image features for kNN
    data_preprocessor={{_base_.data_preprocessor}},
    backbone=dict(
        type='MFFViT',
        arch=vit_arch,
        img_size=32,
        patch_size=4,
        mask_ratio=0.75,
        out_indices=[1, 3],
    ),
    neck=dict(
        type='MAEPretrainDecoder',
        num_patches=64,
        patch_size=4,
        embed_dim=96,
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

optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(
        type='AdamW', lr=0.0015, betas=(0.9, 0.95), weight_decay=0.05
    ),
)
max_epochs = 4
param_scheduler = [
    dict(
        type='LinearLR',
        start_factor=0.1,
        by_epoch=True,
        begin=0,
        end=1,
        convert_to_iter_based=True,
    ),
    dict(
        type='CosineAnnealingLR',
        T_max=max_epochs - 1,
        by_epoch=True,
        begin=1,
        end=max_epochs,
        convert_to_iter_based=True,
    ),
]
train_cfg = dict(
    type='EpochBasedTrainLoop', max_epochs=max_epochs, val_interval=max_epochs
)
auto_scale_lr = dict(base_batch_size=64)
default_hooks = dict(
    logger=dict(interval=10),
    checkpoint=dict(interval=max_epochs, max_keep_ckpts=1),
)
randomness = dict(seed=0)
