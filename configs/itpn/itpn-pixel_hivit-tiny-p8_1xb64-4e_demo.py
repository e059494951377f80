# iTPN (Tian et al. 2023, https://arxiv.org/abs/2211.12735) with pixel
# targets on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a tiny HiViT (96 dims; MLP stem on 2 px inner patches, 7 main blocks
# on 16 tokens of 8 px), 4 epochs on CPU, then a kNN evaluation on
# data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/itpn/itpn-pixel_hivit-tiny-p8_1xb64-4e_demo.py
# Data, AdamW, schedule and runtime: the MAE demo's.
_base_ = '../mae/mae_vit-tiny-p4_1xb64-4e_demo.py'

_patch_size = 8
model = dict(
    _delete_=True,
    type='iTPN',
    data_preprocessor={{_base_.data_preprocessor}},
    backbone=dict(
        type='iTPNHiViT',
        arch=dict(embed_dims=96, depths=[1, 1, 7], num_heads=3),
        img_size=32,
        patch_size=_patch_size,
        inner_patches=4,
        # mmpretrain's HiViT.forward (used for features) compares one index
        # list against both the stem modules (here 2 + merge + 2 + merge,
        # indices 0-5) and the main blocks: the last main block's index
        # (forced to depths[-1] - 1) must not coincide with a stem index, or
        # feature extraction fails with a LayerNorm shape error; hence 7.
        out_indices=[6],
        reconstruction_type='pixel',
        mask_ratio=0.75,
    ),
    neck=dict(
        type='iTPNPretrainDecoder',
        num_patches=(32 // _patch_size) ** 2,
        patch_size=_patch_size,
        in_chans=3,
        embed_dim='auto',
        decoder_embed_dim=64,
        decoder_depth=2,
        decoder_num_heads=4,
        mlp_ratio=4.0,
        reconstruction_type='pixel',
        fpn_dim=48,
        fpn_depth=1,
        num_outs=3,
    ),
    head=dict(
        type='MAEPretrainHead',
        norm_pix=True,
        patch_size=_patch_size,
        loss=dict(type='PixelReconstructionLoss', criterion='L2'),
    ),
    init_cfg=[
        dict(type='Xavier', layer='Linear', distribution='uniform'),
        dict(type='Constant', layer='LayerNorm', val=1.0, bias=0.0),
    ],
)

optim_wrapper = dict(
    paramwise_cfg=dict(
        custom_keys={
            'norm': dict(decay_mult=0.0),
            'bias': dict(decay_mult=0.0),
            'pos_embed': dict(decay_mult=0.0),
            'mask_token': dict(decay_mult=0.0),
        }
    ),
)
find_unused_parameters = True
