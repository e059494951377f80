# MaskFeat (Wei et al. 2022, https://arxiv.org/abs/2112.09133) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a 4-layer ViT (96 dims, 4 px patches), 4 epochs on CPU, then a kNN evaluation on
# data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/maskfeat/maskfeat_vit-tiny-p4_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_train.py',
    '../_base_/schedules/mim_demo_4e.py',
]

train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(
        type='RandomResizedCrop',
        scale=56,
        crop_ratio_range=(0.5, 1.0),
        backend='cv2',
    ),
    dict(
        type='BEiTMaskGenerator',
        input_size=14,
        num_masking_patches=78,
        min_num_patches=15,
    ),
    dict(type='PackInputs'),
]

train_dataloader = dict(dataset=dict(pipeline=train_pipeline))

# a ViT-tiny-ish encoder: 64 tokens of 4x4 px on 32 px images
_vit_arch = dict(
    embed_dims=96, num_layers=4, num_heads=3, feedforward_channels=384
)

# mmpretrain's HOGGenerator assumes a 14x14 patch grid, so the demo trains on
# digits upsampled to 56 px (14x14 patches of 4 px); the kNN evaluation feeds
# 32 px images (the position embedding is interpolated).
# HOG of 2x2-px cells, 9 bins, 3 channels: (4 / 2)**2 * 9 * 3 = 108 targets.
model = dict(
    type='MaskFeat',
    data_preprocessor={{_base_.data_preprocessor}},
    backbone=dict(
        type='MaskFeatViT', arch=_vit_arch, img_size=56, patch_size=4
    ),
    neck=dict(
        type='LinearNeck', in_channels='auto', out_channels=108, norm_cfg=None
    ),
    head=dict(
        type='MIMHead',
        loss=dict(type='PixelReconstructionLoss', criterion='L2'),
    ),
    target_generator=dict(
        type='HOGGenerator', nbins=9, pool=2, gaussian_window=4
    ),
)

optim_wrapper = dict(optimizer=dict(lr=0.001))
