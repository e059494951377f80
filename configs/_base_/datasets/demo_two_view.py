# Two-view training data on the bundled demo digits (data/demo/train, made
# by tools/misc/make_demo_dataset.py), shared by the contrastive and
# siamese demos: 32 px random resized crops with light colour jitter. The
# kNN evaluation on data/demo/val comes from demo_knn.py.
_base_ = ['./demo_single_view_jitter.py']

# a view: demo_single_view_jitter.py's crop and colour jitter
_view_pipeline = _base_.train_pipeline[1:-1]  # noqa: F821
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='MultiView', num_views=2, transforms=[_view_pipeline]),
    dict(type='PackInputs'),
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
