# BEiT v1 demo (beit_vit-tiny-p4_1xb64-4e_demo.py) on the bundled 64 px
# shapes set instead of the digits: the same ViT-tiny with 8 px patches on
# 64 px crops (the same 8x8 grid of tokens, 24 masked block-wise), shapes
# pixel statistics, kNN on data/shapes/val at 64 px. The digits recipe
# cannot be evaluated there: its relative position bias is fixed to the 8x8
# grid of 32 px images, and 64 px kNN images give 16x16. The random DALL-E
# stand-in downsamples 8x, so it sees the same 64 px crop (not a 2x one as
# on the digits) and still gives one code per patch. No flips: the
# two-picture crop hands on a pair that RandomFlip does not take.
#   python tools/misc/make_shapes_dataset.py data/shapes
#   python tools/train.py configs/beit/beit_vit-tiny-p8_1xb64-4e_shapes_demo.py
_base_ = ['./beit_vit-tiny-p4_1xb64-4e_demo.py']

_img_size = 64
_patch_size = 8
_shapes_root = 'data/shapes'
val_dataloader = dict(
    dataset=dict(
        bank=dict(data_root=_shapes_root), query=dict(data_root=_shapes_root)
    )
)
test_dataloader = val_dataloader

train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(
        type='RandomResizedCropAndInterpolationWithTwoPic',
        size=_img_size,
        second_size=_img_size,
        interpolation='bicubic',
        second_interpolation='bicubic',
        scale=(0.5, 1.0),
    ),
    dict(
        type='BEiTMaskGenerator',
        input_size=(_img_size // _patch_size, _img_size // _patch_size),
        num_masking_patches=24,
        max_num_patches=None,
        min_num_patches=4,
    ),
    dict(type='PackInputs'),
]
train_dataloader = dict(
    dataset=dict(data_root='data/shapes/train', pipeline=train_pipeline)
)
# pixel statistics of data/shapes (all channels): mean ~ 70, std ~ 40; the
# tokenizer's second image keeps DALL-E's [-1, 1] scaling
model = dict(
    data_preprocessor=dict(mean=[70.0, 70.0, 70.0], std=[40.0, 40.0, 40.0]),
    backbone=dict(img_size=_img_size, patch_size=_patch_size),
)
