# BEiT v2 (Peng et al. 2022, https://arxiv.org/abs/2208.06366) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a 4-layer ViT (96 dims, 4 px patches), 4 epochs on CPU, then a kNN evaluation on
# data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/beitv2/beitv2_vit-tiny-p4_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_two_pic.py',
    '../_base_/schedules/mim_demo_4e.py',
]

# demo_two_pic.py's data, with the second image (the tokenizer's input) at
# the encoder's 32 px instead of 64 px
train_pipeline = _base_.train_pipeline  # noqa: F821
train_pipeline[1]['second_size'] = 32
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))

# a ViT-tiny-ish encoder: 64 tokens of 4x4 px on 32 px images
_vit_arch = dict(
    embed_dims=96, num_layers=4, num_heads=3, feedforward_channels=384
)

# A random tiny VQ-KD tokenizer (64 codes) stands in for the pretrained one,
# so the demo needs no download (it teaches nothing semantic).
model = dict(
    type='BEiT',
    data_preprocessor={{_base_.data_preprocessor}},
    backbone=dict(
        type='BEiTPretrainViT',
        arch=_vit_arch,
        img_size=32,
        patch_size=4,
        out_indices=[-2, -1],
        final_norm=False,
        out_type='raw',
        layer_scale_init_value=0.1,
    ),
    neck=dict(
        type='BEiTV2Neck',
        num_layers=1,
        early_layers=2,
        # mmpretrain checks for 'num_layers' but reads 'depth'
        backbone_arch=dict(
            embed_dims='auto',
            depth=4,
            num_layers=4,
            num_heads=3,
            feedforward_channels=384,
        ),
        layer_scale_init_value=0.1,
    ),
    head=dict(
        type='BEiTV2Head',
        embed_dims='auto',
        num_embed=64,
        loss=dict(type='CrossEntropyLoss'),
    ),
    target_generator=dict(
        type='VQKD',
        num_embed=64,
        embed_dims=16,
        encoder_config=dict(
            arch=dict(
                embed_dims=32,
                num_layers=1,
                num_heads=2,
                feedforward_channels=64,
            ),
            img_size=32,
            patch_size=4,
            in_channels=3,
            out_indices=-1,
            drop_rate=0.0,
            drop_path_rate=0.0,
            norm_cfg=dict(type='LN', eps=1e-6),
            final_norm=True,
            out_type='featmap',
            with_cls_token=True,
            frozen_stages=-1,
            use_abs_pos_emb=True,
            use_rel_pos_bias=False,
            use_shared_rel_pos_bias=False,
            layer_scale_init_value=0.0,
            interpolate_mode='bicubic',
            patch_cfg=dict(),
            layer_cfgs=dict(),
            init_cfg=None,
        ),
    ),
)

optim_wrapper = dict(optimizer=dict(lr=0.0015))
