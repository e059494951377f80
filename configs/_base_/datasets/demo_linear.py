# Linear-probe data on the bundled demo digits (32 px, data/demo made by
# tools/misc/make_demo_dataset.py): train split with random flips for the
# linear head, val split (no augmentation) for top-1 / top-5.
_linear_data_root = 'data/demo'
_linear_test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='PackInputs'),
]
_linear_train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackInputs'),
]
train_dataloader = dict(
    batch_size=64,
    num_workers=2,
    persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type='CustomDataset',
        data_root=_linear_data_root,
        data_prefix='train',
        pipeline=_linear_train_pipeline,
    ),
)
val_dataloader = dict(
    batch_size=128,
    num_workers=2,
    persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=False),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type='CustomDataset',
        data_root=_linear_data_root,
        data_prefix='val',
        pipeline=_linear_test_pipeline,
    ),
)
test_dataloader = val_dataloader
val_evaluator = dict(type='Accuracy', topk=(1, 5))
test_evaluator = val_evaluator
