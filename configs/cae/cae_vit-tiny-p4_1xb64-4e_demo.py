# CAE (Chen et al. 2023, https://arxiv.org/abs/2202.03026) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a 4-layer ViT (96 dims, 4 px patches), 4 epochs on CPU, then a kNN evaluation on
# data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/cae/cae_vit-tiny-p4_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_two_pic.py',
    '../_base_/schedules/mim_demo_4e.py',
]

# a ViT-tiny-ish encoder: 64 tokens of 4x4 px on 32 px images
_vit_arch = dict(
    embed_dims=96, num_layers=4, num_heads=3, feedforward_channels=384
)

# A random tiny DALL-E encoder (4x downsampling, 64 codes) stands in for the
# pretrained tokenizer so the demo needs no download.
model = dict(
    type='CAE',
    data_preprocessor={{_base_.data_preprocessor}},
    backbone=dict(
        type='CAEPretrainViT',
        arch=_vit_arch,
        img_size=32,
        patch_size=4,
        layer_scale_init_value=0.1,
    ),
    neck=dict(
        type='CAENeck',
        mask_tokens_num=24,
        embed_dims='auto',
        num_heads=3,
        regressor_depth=2,
        decoder_depth=2,
        mlp_ratio=4,
        num_classes=64,
        layer_scale_init_value=0.1,
    ),
    head=dict(type='CAEHead', loss=dict(type='CAELoss', lambd=2)),
    target_generator=dict(
        type='DALL-E', group_count=3, n_hid=16, vocab_size=64
    ),
    base_momentum=0.0,
)

optim_wrapper = dict(optimizer=dict(lr=0.0015))
