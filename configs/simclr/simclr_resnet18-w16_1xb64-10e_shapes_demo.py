# SimCLR demo (simclr_resnet18-w16_1xb64-10e_demo.py) on the bundled 64 px
# shapes set instead of the digits: 64 px random resized crops, flips and
# colour jitter with hue (HueSafeColorJitter: mmcv's ColorJitter with
# hue > 0 fails under numpy 2); kNN on data/shapes/val (shapes_knn.py).
#   python tools/misc/make_shapes_dataset.py data/shapes
#   python tools/train.py \
#       configs/simclr/simclr_resnet18-w16_1xb64-10e_shapes_demo.py
_base_ = ['./simclr_resnet18-w16_1xb64-10e_demo.py']

_shapes_root = 'data/shapes'
val_dataloader = dict(
    dataset=dict(
        bank=dict(data_root=_shapes_root), query=dict(data_root=_shapes_root)
    )
)
test_dataloader = val_dataloader

_view_pipeline = [
    dict(
        type='RandomResizedCrop',
        scale=64,
        crop_ratio_range=(0.3, 1.0),
        backend='cv2',
    ),
    dict(type='RandomFlip', prob=0.5),
    dict(
        type='RandomApply',
        transforms=[
            dict(
                type='HueSafeColorJitter',
                brightness=0.4,
                contrast=0.4,
                saturation=0.4,
                hue=0.1,
            )
        ],
        prob=0.8,
    ),
]
train_pipeline = [
    dict(type='LoadImageRobust'),
    dict(type='MultiView', num_views=2, transforms=[_view_pipeline]),
    dict(type='PackInputs'),
]
train_dataloader = dict(
    dataset=dict(data_root='data/shapes/train', pipeline=train_pipeline)
)
# pixel statistics of data/shapes (all channels): mean ~ 70, std ~ 40
model = dict(
    data_preprocessor=dict(mean=[70.0, 70.0, 70.0], std=[40.0, 40.0, 40.0])
)
