# SimCLR (Chen et al. 2020, https://arxiv.org/abs/2002.05709) with a
# ResNet-50 on YOUR folder of multi-channel TIFFs (microscopy: 4 to 6
# fluorescence channels, 8- or 16-bit, (C, H, W) or (H, W, C) files, any
# sub-folder layout; every .tif/.tiff below data_root is used, unreadable
# files are skipped and named). Needs tifffile:
#   pip install -e ".[multichannel]"
# Copy this file and set the four lines below (docs/en/multichannel.md):
# the channel count, the folder, and the per-channel mean/std printed by
#   python tools/misc/channel_stats.py /path/to/tiffs --channels 5
# then
#   bash tools/dist_train.sh configs/multichannel/MY_CELLS.py 8
_base_ = [
    '../_base_/default_runtime.py',
    '../_base_/schedules/warmup_cosine/simclr_resnet50_5ch.py',
]

_channels = 5
_data_root = 'data/custom_tiffs'
# per-channel statistics after the loader's percentile scaling ([0, 1])
_mean = [0.2, 0.2, 0.2, 0.2, 0.2]
_std = [0.2, 0.2, 0.2, 0.2, 0.2]

_view_pipeline = [
    dict(
        type='RandomResizedCrop',
        scale=224,
        crop_ratio_range=(0.2, 1.0),
        backend='cv2',  # any channel count
    ),
    dict(type='RandomFlip', prob=0.5, direction='horizontal'),
    dict(type='RandomFlip', prob=0.5, direction='vertical'),
    # per-channel brightness/contrast/gamma and channel drop; RGB-only
    # ColorJitter, RandomGrayscale or GaussianBlur are refused here
    dict(
        type='ChannelIntensityJitter',
        brightness=0.4,
        contrast=0.4,
        gamma=0.3,
        drop_prob=0.1,
        prob=0.8,
    ),
]
train_pipeline = [
    dict(
        type='LoadMultiChannelTiff',
        channels=_channels,
        layout='auto',
        scale='percentile',
        percentiles=(1.0, 99.8),
    ),
    dict(type='MultiView', num_views=2, transforms=[_view_pipeline]),
    dict(type='PackInputs'),
]
train_dataloader = dict(
    batch_size=64,
    num_workers=8,
    persistent_workers=True,
    drop_last=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type='ImageFolderDataset',
        data_root=_data_root,
        extensions=('.tif', '.tiff'),
        pipeline=train_pipeline,
    ),
)

model = dict(
    type='SimCLR',
    data_preprocessor=dict(
        type='MultiChannelDataPreprocessor', mean=_mean, std=_std
    ),
    backbone=dict(
        type='ResNet',
        depth=50,
        in_channels=_channels,
        norm_cfg=dict(type='SyncBN'),
        zero_init_residual=True,
    ),
    neck=dict(
        type='NonLinearNeck',
        in_channels='auto',
        hid_channels=2048,
        out_channels=128,
        num_layers=2,
        with_avg_pool=True,
    ),
    head=dict(
        type='ContrastiveHead',
        loss=dict(type='CrossEntropyLoss'),
        temperature=0.1,
    ),
)

# LARS as in the paper, lr 0.3 x batch / 256 (8 x 64 = 512 -> 0.6)
optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='LARS', lr=0.6, momentum=0.9, weight_decay=1e-6),
    paramwise_cfg=dict(
        custom_keys={
            'bn': dict(decay_mult=0, lars_exclude=True),
            'bias': dict(decay_mult=0, lars_exclude=True),
            'downsample.1': dict(decay_mult=0, lars_exclude=True),
        }
    ),
)
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=200)
auto_scale_lr = dict(base_batch_size=512)
# a checkpoint every 10 of the 200 epochs, as a run fraction
default_hooks = dict(checkpoint=dict(interval='5%', max_keep_ckpts=3))
# RankMe of the backbone's features on 1024 of the tiffs before training and
# after every epoch: the run's figure without labels (docs/en/custom_dataset.md)
custom_hooks = [
    dict(type='BadFileSummaryHook', interval=50),
    dict(type='RankMeHook'),
]
