# DINOv2 demo (dinov2_vit-tiny-p4_1xb64-10e_demo.py) on the bundled 64 px
# shapes set instead of the digits: the same ViT-tiny with 8 px patches on
# 64 px images (the same 64 tokens), 2 global 64 px + 4 local 32 px crops,
# iBOT masks on the 8 px grid, kNN on data/shapes/val.
#   python tools/misc/make_shapes_dataset.py data/shapes
#   python tools/train.py \
#       configs/dinov2/dinov2_vit-tiny-p8_1xb64-10e_shapes_demo.py
_base_ = ['./dinov2_vit-tiny-p4_1xb64-10e_demo.py']

_patch_size = 8
_shapes_root = 'data/shapes'
val_dataloader = dict(
    dataset=dict(
        bank=dict(data_root=_shapes_root), query=dict(data_root=_shapes_root)
    )
)
test_dataloader = val_dataloader

train_pipeline = [
    dict(type='LoadImageRobust'),
    dict(
        type='MultiCrop',
        num_global_crops={{_base_._num_global_crops}},
        num_local_crops={{_base_._num_local_crops}},
        global_size=64,
        local_size=32,
        global_scale=(0.4, 1.0),
        local_scale=(0.1, 0.4),
        blur_kernel_size=5,
    ),
    dict(type='PackInputs'),
]
train_dataloader = dict(
    # the demo's batch-level iBOT masks, on the 8 px grid
    collate_fn=dict(patch_size=_patch_size),
    dataset=dict(data_root='data/shapes/train', pipeline=train_pipeline),
)
# pixel statistics of data/shapes (all channels): mean ~ 70, std ~ 40
model = dict(
    data_preprocessor=dict(mean=[70.0, 70.0, 70.0], std=[40.0, 40.0, 40.0]),
    backbone=dict(img_size=64, patch_size=_patch_size),
)
