# MaskFeat demo (maskfeat_vit-tiny-p4_1xb64-4e_demo.py) on the bundled 64 px
# shapes set instead of the digits, with MAE's shapes recipe
# (configs/mae/mae_vit-tiny-p8_1xb64-40e_shapes_demo.py): the same ViT-tiny
# with 8 px patches on 64 px images (64 tokens, 26 of them, ~40 % as in the
# paper, masked block-wise), 64 px random resized crops and flips, shapes
# pixel statistics, kNN on data/shapes/val, and 40 epochs. The digits demo
# upsamples to 56 px for mmpretrain's 14x14 HOG grid; PatchHOGGenerator
# gives one HOG target per 8 px token instead: 4 px cells (2x2 a token, the
# paper's 8 px cells in 16 px patches, halved), 9 bins, 3 channels: 108
# targets. MIM features are judged by the linear probe
# configs/benchmarks/linear_probe/linear_vit-tiny-p8_1xb64-5e_shapes.py.
#   python tools/misc/make_shapes_dataset.py data/shapes
#   python tools/train.py configs/maskfeat/maskfeat_vit-tiny-p8_1xb64-40e_shapes_demo.py
_base_ = [
    './maskfeat_vit-tiny-p4_1xb64-4e_demo.py',
    '../_base_/datasets/shapes_64px_mim.py',
]
__shapes = _base_.pop('_shapes_64px')  # noqa: F821

_img_size = 64
_patch_size = 8
_shapes_root = 'data/shapes'
val_dataloader = __shapes['val_dataloader']
test_dataloader = val_dataloader

train_pipeline = __shapes['crop_flip'] + [
    dict(
        type='BEiTMaskGenerator',
        input_size=_img_size // _patch_size,
        num_masking_patches=26,
        min_num_patches=4,
    ),
    dict(type='PackInputs'),
]
train_dataloader = dict(
    dataset=dict(
        data_root=__shapes['train_data_root'], pipeline=train_pipeline
    )
)
# pixel statistics of data/shapes (all channels): mean ~ 70, std ~ 40
model = dict(
    data_preprocessor=__shapes['data_preprocessor'],
    backbone=dict(img_size=_img_size, patch_size=_patch_size),
    target_generator=dict(
        type='PatchHOGGenerator',
        patch_size=_patch_size,
        nbins=9,
        pool=4,
        gaussian_window=8,
    ),
)
train_cfg = dict(max_epochs=40)
