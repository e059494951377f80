# BEiT v2 demo (beitv2_vit-tiny-p4_1xb64-4e_demo.py) on the bundled 64 px
# shapes set instead of the digits: the same ViT-tiny with 8 px patches on
# 64 px crops (the same 8x8 grid of tokens, 24 masked block-wise), shapes
# pixel statistics, kNN on data/shapes/val at 64 px. The digits recipe
# cannot be evaluated there: its relative position bias is fixed to the 8x8
# grid of 32 px images, and 64 px kNN images give 16x16. The random VQ-KD
# stand-in takes the same 64 px crop with 8 px patches, so it still gives
# one code per patch. No flips: the two-picture crop hands on a pair that
# RandomFlip does not take.
#   python tools/misc/make_shapes_dataset.py data/shapes
#   python tools/train.py configs/beitv2/beitv2_vit-tiny-p8_1xb64-4e_shapes_demo.py
_base_ = [
    './beitv2_vit-tiny-p4_1xb64-4e_demo.py',
    '../_base_/datasets/shapes_64px_mim.py',
]
__shapes = _base_.pop('_shapes_64px')  # noqa: F821

_img_size = 64
_patch_size = 8
_shapes_root = 'data/shapes'
val_dataloader = __shapes['val_dataloader']
test_dataloader = val_dataloader

train_pipeline = __shapes['two_pic_pipeline']
train_dataloader = dict(
    dataset=dict(
        data_root=__shapes['train_data_root'], pipeline=train_pipeline
    )
)
# pixel statistics of data/shapes (all channels): mean ~ 70, std ~ 40; the
# tokenizer's second image keeps its [-1, 1] scaling
model = dict(
    data_preprocessor=__shapes['data_preprocessor'],
    backbone=dict(img_size=_img_size, patch_size=_patch_size),
    target_generator=dict(
        encoder_config=dict(img_size=_img_size, patch_size=_patch_size)
    ),
)
