# BEiT v1 (Bao et al. 2022, https://arxiv.org/abs/2106.08254) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a 4-layer ViT (96 dims, 4 px patches), 4 epochs on CPU, then a kNN evaluation on
# data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/beit/beit_vit-tiny-p4_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_two_pic.py',
    '../_base_/schedules/mim_demo_4e.py',
]

# a ViT-tiny-ish encoder: 64 tokens of 4x4 px on 32 px images
_vit_arch = dict(
    embed_dims=96, num_layers=4, num_heads=3, feedforward_channels=384
)

# A random tiny DALL-E encoder (64 codes, on the 64 px second image) stands in
# for the pretrained tokenizer so the demo needs no download.
model = dict(
    type='BEiT',
    data_preprocessor={{_base_.data_preprocessor}},
    backbone=dict(
        type='BEiTPretrainViT',
        arch=_vit_arch,
        img_size=32,
        patch_size=4,
        final_norm=True,
        out_type='raw',
        layer_scale_init_value=0.1,
    ),
    neck=None,
    head=dict(
        type='BEiTV1Head',
        embed_dims='auto',
        num_embed=64,
        loss=dict(type='CrossEntropyLoss'),
    ),
    target_generator=dict(
        type='DALL-E', group_count=4, n_hid=16, vocab_size=64
    ),
)

optim_wrapper = dict(optimizer=dict(lr=0.0015))
