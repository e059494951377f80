# DINO (Caron et al. 2021, https://arxiv.org/abs/2104.14294) ViT-S/16 on
# YOUR folder of multi-channel TIFFs (microscopy: 4 to 6 fluorescence
# channels, 8- or 16-bit, (C, H, W) or (H, W, C) files, any sub-folder
# layout; every .tif/.tiff below data_root is used, unreadable files are
# skipped and named). The DINO recipe of
# configs/dino/dino_vit-s16_8xb128-100e_in1k.py (2 x 224 + 10 x 96 crops,
# centering, teacher temperature 0.04 -> 0.07, momentum 0.996 -> 1) with
# channel-aware parts: the patch embedding takes C channels,
# MultiChannelMultiCrop replaces the RGB colour jitter, grayscale and
# solarization by per-channel intensity jitter and channel drop (and adds
# vertical flips), and the preprocessor normalises each channel.
# configs/multichannel/dinov2_vit-s14_8xb64-100e_5ch_custom.py is the
# DINOv2 version (iBOT masks, KoLeo). Needs tifffile:
#   pip install -e ".[multichannel]"
# Copy this file and set the four lines below (docs/en/multichannel.md):
# the channel count, the folder, and the per-channel mean/std printed by
#   python tools/misc/channel_stats.py /path/to/tiffs --channels 5
# then
#   bash tools/dist_train.sh configs/multichannel/MY_CELLS.py 8
_base_ = [
    '../_base_/models/dino_vit-s16.py',
    '../_base_/schedules/dino_family_100e.py',
    '../_base_/schedules/teacher_student_hooks.py',
    '../_base_/schedules/dino_adamw.py',
]

_channels = 5
_data_root = 'data/custom_tiffs'
# per-channel statistics after the loader's percentile scaling ([0, 1])
_mean = [0.2, 0.2, 0.2, 0.2, 0.2]
_std = [0.2, 0.2, 0.2, 0.2, 0.2]

train_pipeline = [
    dict(
        type='LoadMultiChannelTiff',
        channels=_channels,
        layout='auto',
        scale='percentile',
        percentiles=(1.0, 99.8),
    ),
    # DINO's crops; RGB-only MultiCrop, ColorJitter, RandomGrayscale,
    # GaussianBlur (PIL) or Solarize are refused in this pipeline
    dict(
        type='MultiChannelMultiCrop',
        num_global_crops=2,
        num_local_crops=10,
        global_size=224,
        local_size=96,
        global_scale=(0.4, 1.0),
        local_scale=(0.05, 0.4),
        jitter=dict(
            brightness=0.4, contrast=0.4, gamma=0.3, drop_prob=0.1, prob=0.8
        ),
    ),
    dict(
        type='PackInputs',
        meta_keys=('sample_idx', 'img_path', 'num_global_crops'),
    ),
]
train_dataloader = dict(
    batch_size=64,
    num_workers=8,
    persistent_workers=True,
    pin_memory=True,
    drop_last=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type='ImageFolderDataset',
        data_root=_data_root,
        extensions=('.tif', '.tiff'),
        max_bad_ratio=0.05,
        pipeline=train_pipeline,
    ),
)

model = dict(
    data_preprocessor=dict(
        _delete_=True,
        type='MultiChannelDataPreprocessor',
        mean=_mean,
        std=_std,
    ),
    backbone=dict(in_channels=_channels),
)

# DINO: lr 0.0005 x total batch / 256 (8 x 64 = 512 -> 0.001)
optim_wrapper = dict(optimizer=dict(lr=0.0005 * 512 / 256))
custom_hooks = _base_.pop('_teacher_student_hooks')['dino_vit']  # noqa: F821
auto_scale_lr = dict(base_batch_size=512, rule='linear')
env_cfg = dict(dist_cfg=dict(backend='nccl'))
