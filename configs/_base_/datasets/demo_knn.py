# kNN evaluation on the bundled demo data (tools/misc/make_demo_dataset.py):
# the labelled train split is the feature bank, the val split the queries.
_knn_data_root = 'data/demo'
_knn_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='PackInputs'),
]
# the bank and the queries: one folder dataset, two splits
__split = dict(
    type='CustomDataset', data_root=_knn_data_root, pipeline=_knn_pipeline
)
_knn_dataloader = dict(
    batch_size=128,
    num_workers=2,
    sampler=dict(type='DefaultSampler', shuffle=False),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type='KNNDataset',
        bank=dict(__split, data_prefix='train'),
        query=dict(__split, data_prefix='val'),
    ),
)
val_dataloader = _knn_dataloader
test_dataloader = _knn_dataloader
val_evaluator = dict(type='KNNAccuracy', k=20, temperature=0.07, topk=(1, 5))
test_evaluator = val_evaluator
val_cfg = dict(type='FeatureValLoop')
test_cfg = dict(type='FeatureTestLoop')
