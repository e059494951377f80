# CAE demo (cae_vit-tiny-p4_1xb64-4e_demo.py) on the bundled 64 px shapes
# set instead of the digits, with MAE's shapes recipe
# (configs/mae/mae_vit-tiny-p8_1xb64-40e_shapes_demo.py): the same ViT-tiny
# with 8 px patches on 64 px images (the same 64 tokens, 24 of them masked
# block-wise), 64 px random resized crops, shapes pixel statistics, kNN on
# data/shapes/val, and 16 epochs (4 are far too few on this set). The random
# DALL-E stand-in downsamples 8x, so it now sees the same 64 px crop (not a
# 2x one as on the digits) and still gives one code per 8 px patch. No flips:
# the two-picture crop hands on a pair that RandomFlip does not take. MIM
# features are judged by the linear probe
# configs/benchmarks/linear_probe/linear_vit-tiny-p8_1xb64-5e_shapes.py.
#   python tools/misc/make_shapes_dataset.py data/shapes
#   python tools/train.py configs/cae/cae_vit-tiny-p8_1xb64-16e_shapes_demo.py
_base_ = [
    './cae_vit-tiny-p4_1xb64-4e_demo.py',
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
# tokenizer's second image keeps DALL-E's [-1, 1] scaling
model = dict(
    data_preprocessor=__shapes['data_preprocessor'],
    backbone=dict(img_size=_img_size, patch_size=_patch_size),
)
# 16 epochs (736 iterations, ~11 min on one thread): a CAE iteration costs
# about 3 EVA ones (the tokenizer at 64 px, the momentum teacher, the
# regressor and decoder)
train_cfg = dict(max_epochs=16)
