# SimCLR (Chen et al. 2020, https://arxiv.org/abs/2002.05709) on 5-channel
# 16-bit TIFFs: a CIFAR-style ResNet-18 of width 16 taking 5 input
# channels, two views per image made of channel-aware augmentations only
# (random resized crop, flips, per-channel intensity jitter, channel drop;
# no hue, saturation or grayscale). CPU demo on the synthetic 'cells'
# (3 classes told apart only by which channels light up together), ending
# with kNN top-1 on data/multichannel/val (README.md for the figures).
#   pip install -e ".[multichannel]"   # tifffile
#   python tools/misc/make_multichannel_dataset.py data/multichannel
#   python tools/train.py \
#       configs/multichannel/simclr_resnet18-w16_1xb64-20e_5ch_demo.py
_base_ = [
    '../_base_/datasets/multichannel_train.py',
    '../_base_/schedules/demo_4e_sgd.py',
    '../_base_/models/demo_projector_128-64.py',
]

_view_pipeline = [
    dict(
        type='RandomResizedCrop',
        scale=32,
        crop_ratio_range=(0.3, 1.0),
        backend='cv2',  # any channel count (the pillow backend: 1 or 3)
    ),
    dict(type='RandomFlip', prob=0.5, direction='horizontal'),
    dict(type='RandomFlip', prob=0.5, direction='vertical'),
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
    dict(type='LoadMultiChannelTiff', channels=5, scale='percentile'),
    dict(type='MultiView', num_views=2, transforms=[_view_pipeline]),
    dict(type='PackInputs'),
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))

__proj = _base_.pop('_demo_projector')  # noqa: F821
model = dict(
    type='SimCLR',
    data_preprocessor={{_base_.data_preprocessor}},
    backbone=dict(
        type='ResNet_CIFAR',
        depth=18,
        in_channels=5,
        stem_channels=16,
        base_channels=16,
        zero_init_residual=True,
    ),
    neck=__proj['neck'],
    head=__proj['head'],
)

optim_wrapper = dict(optimizer=dict(lr=0.1))
train_cfg = dict(max_epochs=20)
custom_hooks = [dict(type='BadFileSummaryHook', interval=50)]
