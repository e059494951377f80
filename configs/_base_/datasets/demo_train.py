# Training on the bundled demo digits (data/demo/train, made by
# tools/misc/make_demo_dataset.py), any pipeline: the digits' normalisation
# and a 64-image loader. A data base or a config adds its train_pipeline
# (`train_dataloader = dict(dataset=dict(pipeline=train_pipeline))`). The
# kNN evaluation on data/demo/val comes from demo_knn.py.
_base_ = ['./demo_knn.py']

data_preprocessor = dict(
    type='SelfSupDataPreprocessor',
    mean=[33.0, 33.0, 33.0],
    std=[60.0, 60.0, 60.0],
    to_rgb=True,
)
train_dataloader = dict(
    batch_size=64,
    num_workers=2,
    persistent_workers=True,
    drop_last=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(type='ImageFolderDataset', data_root='data/demo/train'),
)
