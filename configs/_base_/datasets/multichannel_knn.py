# kNN evaluation on the synthetic labelled 5-channel 16-bit TIFFs
# (python tools/misc/make_multichannel_dataset.py data/multichannel): the
# train split (<class>/<index>.tif) is the feature bank, the val split the
# queries. Needs tifffile: pip install -e ".[multichannel]".
_knn_data_root = 'data/multichannel'
_knn_pipeline = [
    dict(type='LoadMultiChannelTiff', channels=5, scale='percentile'),
    dict(type='PackInputs'),
]
# the bank and the queries: one folder dataset, two splits
__split = dict(
    type='ImageFolderDataset', with_label=True, pipeline=_knn_pipeline
)
_knn_dataloader = dict(
    batch_size=150,
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
