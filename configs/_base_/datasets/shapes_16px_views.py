# Two-view contrastive training and kNN on the bundled shapes set
# (data/shapes, 64 px; tools/misc/make_shapes_dataset.py) at 16 px, the
# recipe with which SimCLR learns shape there in 30 epochs (kNN 41.8
# against 12.9 at random init; MoCo v2 only 14.7 against 10.6, BYOL
# 11.2 against 12.6; see
# configs/simclr/README.md, docs/en/model_zoo.md):
# - views and kNN images at 16 px: 16x cheaper than 64 px, and the 1 px
#   lines and dots of the clutter mostly average away while the shapes
#   stay;
# - all eight turns by 90 degrees and reflections: the classes do not
#   depend on pose, and the clutter's layout no longer matches between
#   the two views of an image;
# - colour jitter over the full hue circle and grayscale half the time:
#   colours are drawn apart from the class.
# Private keys only, so a demo lists this file next to its digits demo and
# takes what it needs:
#   _base_ = ['./<algo>_..._demo.py', '../_base_/datasets/<this file>']
#   train_dataloader = dict(dataset=dict(
#       data_root='data/shapes/train',
#       pipeline={{_base_._shapes16_train_pipeline}}))
#   val_dataloader = {{_base_._shapes16_knn_dataloader}}
_shapes16_size = 16
_shapes16_knn_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(
        type='Resize',
        scale=(_shapes16_size, _shapes16_size),
        interpolation='area',
    ),
    dict(type='PackInputs'),
]
# merged into the digits demo's kNN loader: other folder and pipeline
_shapes16_knn_dataloader = dict(
    dataset=dict(
        bank=dict(data_root='data/shapes', pipeline=_shapes16_knn_pipeline),
        query=dict(data_root='data/shapes', pipeline=_shapes16_knn_pipeline),
    )
)
_shapes16_view = [
    dict(
        type='RandomResizedCrop',
        scale=_shapes16_size,
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
_shapes16_train_pipeline = [
    dict(type='LoadImageRobust'),
    dict(type='MultiView', num_views=2, transforms=[_shapes16_view]),
    dict(type='PackInputs'),
]
# pixel statistics of data/shapes (all channels): mean ~ 70, std ~ 40
_shapes16_mean = [70.0, 70.0, 70.0]
_shapes16_std = [40.0, 40.0, 40.0]
