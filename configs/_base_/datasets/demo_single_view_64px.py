# demo_single_view.py at 64 px, for the demos whose encoders downsample 32x
# (MixMIM, SparK): the 32 px digits (data/demo/train) upsampled by a 64 px
# random resized crop, and the kNN on data/demo/val at the same 64 px.
_base_ = ['./demo_train.py']

train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(
        type='RandomResizedCrop',
        scale=64,
        crop_ratio_range=(0.5, 1.0),
        backend='cv2',
    ),
    dict(type='PackInputs'),
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))

_knn_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=(64, 64), backend='cv2'),
    dict(type='PackInputs'),
]
val_dataloader = dict(
    dataset=dict(
        bank=dict(pipeline=_knn_pipeline), query=dict(pipeline=_knn_pipeline)
    )
)
test_dataloader = val_dataloader
