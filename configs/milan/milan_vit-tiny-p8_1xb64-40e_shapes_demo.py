# MILAN demo (milan_vit-tiny-p4_1xb64-4e_demo.py) on the bundled 64 px
# shapes set instead of the digits, with MAE's shapes recipe
# (configs/mae/mae_vit-tiny-p8_1xb64-40e_shapes_demo.py): the same ViT-tiny
# with 8 px patches on 64 px images (the same 64 tokens, 75 % masked), 64 px
# random resized crops and flips, shapes pixel statistics, kNN on
# data/shapes/val, and 40 epochs (4 are far too few on this set). The random
# stand-in CLIP target sees the same 64 px image in 8 px patches, so its
# 64 tokens still line up with the student's, and adds its attention output
# to the tokens (residual=True): without that its near-uniform random
# attention gives all tokens of an image the same target (README.md). MIM
# features are judged by the linear probe (tools/misc/knn_eval.py --linear).
#   python tools/misc/make_shapes_dataset.py data/shapes
#   python tools/train.py configs/milan/milan_vit-tiny-p8_1xb64-40e_shapes_demo.py
_base_ = [
    './milan_vit-tiny-p4_1xb64-4e_demo.py',
    '../_base_/datasets/shapes_64px_mim.py',
]
__shapes = _base_.pop('_shapes_64px')  # noqa: F821

_img_size = 64
_patch_size = 8
_shapes_root = 'data/shapes'
val_dataloader = __shapes['val_dataloader']
test_dataloader = val_dataloader

train_pipeline = __shapes['crop_flip'] + [dict(type='PackInputs')]
train_dataloader = dict(
    dataset=dict(
        data_root=__shapes['train_data_root'], pipeline=train_pipeline
    )
)
# pixel statistics of data/shapes (all channels): mean ~ 70, std ~ 40
model = dict(
    data_preprocessor=__shapes['data_preprocessor'],
    backbone=dict(img_size=_img_size, patch_size=_patch_size),
    neck=dict(patch_size=_patch_size),
    target_generator=dict(
        img_size=_img_size, patch_size=_patch_size, residual=True
    ),
)
train_cfg = dict(max_epochs=40)
