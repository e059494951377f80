# Training data of the 5-channel CPU demos: the synthetic 16-bit TIFF
# 'cells' (python tools/misc/make_multichannel_dataset.py data/multichannel;
# needs tifffile: pip install -e ".[multichannel]"), data/multichannel/train
# with every channel normalised by its mean/std after the loader's
# percentile scaling (python tools/misc/channel_stats.py
# data/multichannel/train --channels 5). Each demo sets its pipeline:
#   train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
# The kNN evaluation on data/multichannel/val comes from multichannel_knn.py.
_base_ = ['./multichannel_knn.py']

data_preprocessor = dict(
    type='MultiChannelDataPreprocessor',
    mean=[0.2125, 0.2388, 0.2435, 0.2432, 0.2489],
    std=[0.1654, 0.1967, 0.1978, 0.1969, 0.1985],
)
train_dataloader = dict(
    batch_size=64,
    num_workers=2,
    persistent_workers=True,
    drop_last=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type='ImageFolderDataset',
        data_root='data/multichannel/train',
        extensions=('.tif', '.tiff'),
    ),
)
