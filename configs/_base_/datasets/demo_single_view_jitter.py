# Single-view training data on the bundled demo digits (data/demo/train,
# made by tools/misc/make_demo_dataset.py), shared by the instance and
# pretext-task demos (NPID, ODC, DeepCluster, rotation prediction): one
# 32 px random resized crop with light colour jitter per image. The kNN
# evaluation on data/demo/val comes from demo_knn.py.
_base_ = ['./demo_single_view.py']

# demo_single_view.py's crop, then the colour jitter
train_pipeline = _base_.train_pipeline[:-1] + [  # noqa: F821
    dict(
        type='RandomApply',
        transforms=[dict(type='ColorJitter', brightness=0.4, contrast=0.4)],
        prob=0.8,
    ),
    dict(type='PackInputs'),
]

train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
