# Two-view training data on the bundled demo digits (data/demo/train, made
# by tools/misc/make_demo_dataset.py), shared by the contrastive and
# siamese demos: 32 px random resized crops with light colour jitter. The
# kNN evaluation on data/demo/val comes from demo_knn.py.
_base_ = ['./demo_train.py']


_view_pipeline = [
    dict(
        type='RandomResizedCrop',
        scale=32,
        crop_ratio_range=(0.5, 1.0),
        backend='cv2',
    ),
    dict(
        type='RandomApply',
        transforms=[dict(type='ColorJitter', brightness=0.4, contrast=0.4)],
        prob=0.8,
    ),
]
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='MultiView', num_views=2, transforms=[_view_pipeline]),
    dict(type='PackInputs'),
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
