# kNN evaluation on the bundled demo data (tools/misc/make_demo_dataset.py):
# the labelled train split is the feature bank, the val split the queries.
_knn_data_root = 'data/demo'
_knn_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='PackInputs'),
]
_knn_dataloader = dict(
    batch_size=128,
    num_workers=2,
    sampler=dict(type='DefaultSampler', shuffle=False),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type='KNNDataset',
        bank=dict(
            type='CustomDataset',
            data_root=_knn_data_root,
            data_prefix='train',
            pipeline=_knn_pipeline,
        ),
        query=dict(
            type='CustomDataset',
            data_root=_knn_data_root,
            data_prefix='val',
            pipeline=_knn_pipeline,
        ),
    ),
)
val_dataloader = _knn_dataloader
test_dataloader = _knn_dataloader
val_evaluator = dict(type='KNNAccuracy', k=20, temperature=0.07, topk=(1, 5))
test_evaluator = val_evaluator
val_cfg = dict(type='FeatureValLoop')
test_cfg = dict(type='FeatureTestLoop')
