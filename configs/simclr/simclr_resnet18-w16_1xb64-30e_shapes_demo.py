# SimCLR demo (simclr_resnet18-w16_1xb64-10e_demo.py) on the bundled 64 px
# shapes set instead of the digits, a recipe that learns shape there:
# views and kNN at 16 px (16x cheaper than 64 px; the 1 px lines and dots
# of the clutter mostly average away, the shapes stay), any rotation by
# 90 degrees and flip (the classes do not depend on pose, the clutter's
# layout then no longer matches between the views), colour jitter with the
# full hue circle and grayscale half the time (colour is drawn apart from
# the class), 30 epochs. On the 64 px digits recipe (10 epochs) kNN stayed
# at its random init: see README.md and docs/en/model_zoo.md.
#   python tools/misc/make_shapes_dataset.py data/shapes
#   python tools/train.py \
#       configs/simclr/simclr_resnet18-w16_1xb64-30e_shapes_demo.py
_base_ = ['./simclr_resnet18-w16_1xb64-10e_demo.py']

_size = 16  # views and kNN images, px
_shapes_root = 'data/shapes'
_knn_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=(_size, _size), interpolation='area'),
    dict(type='PackInputs'),
]
val_dataloader = dict(
    dataset=dict(
        bank=dict(data_root=_shapes_root, pipeline=_knn_pipeline),
        query=dict(data_root=_shapes_root, pipeline=_knn_pipeline),
    )
)
test_dataloader = val_dataloader

_view_pipeline = [
    dict(
        type='RandomResizedCrop',
        scale=_size,
        crop_ratio_range=(0.4, 1.0),
        backend='cv2',
        interpolation='area',
    ),
    # with the 90 degree turns below: all eight rotations and reflections
    dict(
        type='RandomFlip',
        prob=[0.25, 0.25, 0.25],
        direction=['horizontal', 'vertical', 'diagonal'],
    ),
    dict(type='Rotate', angle=90.0, prob=0.5, random_negative_prob=0.5),
    dict(
        type='HueSafeColorJitter',
        brightness=0.8,
        contrast=0.8,
        saturation=0.8,
        hue=0.5,
    ),
    dict(
        type='RandomGrayscale',
        prob=0.5,
        keep_channels=True,
        channel_weights=(0.114, 0.587, 0.2989),  # BGR images
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
train_cfg = dict(max_epochs=30)
