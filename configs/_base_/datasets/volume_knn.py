# kNN evaluation on the synthetic labelled volumes
# (python tools/misc/make_volume_dataset.py data/volumes): the train split
# (<class>/<index>.npy) is the feature bank, the val split the queries.
_knn_data_root = 'data/volumes'
_knn_preprocess = [dict(type='LoadVolume')]
_knn_pipeline = [
    # MONAI MetaTensor -> plain tensor, so batches collate as tensors
    dict(
        type='MONAITransform',
        transform='EnsureTyped',
        keys='img',
        track_meta=False,
    ),
    dict(type='PackInputs'),
]
# the bank and the queries: one folder dataset, two splits
__split = dict(
    type='VolumeFolderDataset',
    with_label=True,
    preprocess=_knn_preprocess,
    pipeline=_knn_pipeline,
)
_knn_dataloader = dict(
    batch_size=50,
    num_workers=0,
    sampler=dict(type='DefaultSampler', shuffle=False),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type='KNNDataset',
        bank=dict(__split, data_root=_knn_data_root + '/train'),
        query=dict(__split, data_root=_knn_data_root + '/val'),
    ),
)
val_dataloader = _knn_dataloader
test_dataloader = _knn_dataloader
val_evaluator = dict(type='KNNAccuracy', k=20, temperature=0.07, topk=(1,))
test_evaluator = val_evaluator
val_cfg = dict(type='FeatureValLoop')
test_cfg = dict(type='FeatureTestLoop')
