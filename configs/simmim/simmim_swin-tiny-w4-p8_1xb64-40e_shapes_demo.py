# SimMIM demo (simmim_swin-tiny-w4_1xb64-16e_demo.py) on the bundled 64 px
# shapes set instead of the digits, with MAE's shapes recipe
# (configs/mae/mae_vit-tiny-p8_1xb64-40e_shapes_demo.py): the same 2-stage
# Swin with 8 px patches on 64 px images (the same 8x8 token grid and 4 px
# windows of tokens), 60 % of the image masked in 16 px squares (twice the
# patch, as on the digits), 64 px random resized crops and flips, shapes
# pixel statistics, kNN on data/shapes/val, and 40 epochs. The decoder
# upsamples the 4x4 stage-2 map by 16 back to pixels. MIM features are
# judged by the linear probe (tools/misc/knn_eval.py --linear).
#   python tools/misc/make_shapes_dataset.py data/shapes
#   python tools/train.py configs/simmim/simmim_swin-tiny-w4-p8_1xb64-40e_shapes_demo.py
_base_ = [
    './simmim_swin-tiny-w4_1xb64-16e_demo.py',
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
        type='SimMIMMaskGenerator',
        input_size=_img_size,
        mask_patch_size=2 * _patch_size,
        model_patch_size=_patch_size,
        mask_ratio=0.6,
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
    backbone=dict(
        img_size=_img_size,
        patch_cfg=dict(kernel_size=_patch_size, stride=_patch_size),
        # a stage-2 map under the 4-token window (images under 64 px, e.g.
        # the 32 px digits) is padded; at 64 px nothing is
        pad_small_map=True,
    ),
    neck=dict(encoder_stride=2 * _patch_size),  # stage 2 halves the grid
    head=dict(patch_size=_patch_size),
)
train_cfg = dict(max_epochs=40)
