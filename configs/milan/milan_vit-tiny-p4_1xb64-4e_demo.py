# MILAN (Hou et al. 2022, https://arxiv.org/abs/2208.06049) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a 4-layer ViT (96 dims, 4 px patches), 4 epochs on CPU, then a kNN evaluation on
# data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/milan/milan_vit-tiny-p4_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_single_view.py',
    '../_base_/schedules/mim_demo_4e.py',
]

# a ViT-tiny-ish encoder: 64 tokens of 4x4 px on 32 px images
_vit_arch = dict(
    embed_dims=96, num_layers=4, num_heads=3, feedforward_channels=384
)

# StandInCLIPTarget: a random tiny stand-in for the CLIP ViT-B/16 target so
# the demo needs no download (it teaches nothing semantic).
model = dict(
    type='MILAN',
    data_preprocessor={{_base_.data_preprocessor}},
    backbone=dict(
        type='MILANViT',
        arch=_vit_arch,
        img_size=32,
        patch_size=4,
        mask_ratio=0.75,
    ),
    neck=dict(
        type='MILANPretrainDecoder',
        num_patches=64,
        patch_size=4,
        embed_dim='auto',
        decoder_embed_dim=64,
        decoder_depth=2,
        decoder_num_heads=4,
        predict_feature_dim=64,
    ),
    head=dict(
        type='MIMHead',
        loss=dict(
            type='CosineSimilarityLoss', shift_factor=2.0, scale_factor=2.0
        ),
    ),
    target_generator=dict(
        type='StandInCLIPTarget', img_size=32, patch_size=4, out_dims=64
    ),
)

optim_wrapper = dict(optimizer=dict(lr=0.0015))
