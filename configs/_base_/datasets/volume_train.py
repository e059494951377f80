# Training data of the volumetric demos: the synthetic train split
# (python tools/misc/make_volume_dataset.py data/volumes), read once and
# cached in memory. A demo sets the views: train_dataloader =
# dict(dataset=dict(pipeline=train_pipeline)). The kNN evaluation on the
# val split comes from volume_knn.py.
_base_ = ['./volume_knn.py']

train_dataloader = dict(
    batch_size=32,
    num_workers=0,
    drop_last=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type='VolumeFolderDataset',
        data_root='data/volumes/train',
        preprocess=[dict(type='LoadVolume')],
        pipeline=[],
        cache='memory',
        cache_max_gb=1,
    ),
)
