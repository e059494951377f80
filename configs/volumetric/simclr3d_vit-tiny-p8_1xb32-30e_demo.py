# SimCLR (Chen et al. 2020) on volumes: a 4-block 3D ViT of width 64 with
# 8-voxel patches (64 tokens on 32^3), two 3D crops per volume with flips,
# 90-degree rotations and intensity jitter; NT-Xent at temperature 0.2.
# CPU demo on the synthetic shapes (4 classes, 200 train volumes), ending
# with kNN top-1 on data/volumes/val (README.md for the figures).
#   python tools/misc/make_volume_dataset.py data/volumes
#   python tools/train.py \
#       configs/volumetric/simclr3d_vit-tiny-p8_1xb32-30e_demo.py
_base_ = [
    '../_base_/datasets/volume_train.py',
    '../_base_/schedules/demo_4e.py',
]

train_pipeline = [
    dict(
        type='MultiCrop3D',
        global_size=32,
        num_global=2,
        num_local=0,
        global_scale=(0.3, 1.0),
        intensity_scale=0.3,
        intensity_shift=0.2,
    ),
    dict(type='PackInputs'),
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))

model = dict(
    type='SimCLR3D',
    data_preprocessor=dict(type='SelfSupDataPreprocessor'),
    backbone=dict(
        type='VisionTransformer3D',
        arch=dict(
            embed_dims=64, num_layers=4, num_heads=4, feedforward_channels=256
        ),
        img_size=32,
        patch_size=8,
        drop_path_rate=0.0,
        out_type='cls_token',
    ),
    neck=dict(
        type='NonLinearNeck',
        in_channels='auto',
        hid_channels=128,
        out_channels=64,
        num_layers=2,
        with_avg_pool=False,
    ),
    loss=dict(type='NTXentLoss', temperature=0.2),
)

optim_wrapper = dict(
    optimizer=dict(type='AdamW', lr=1e-3, weight_decay=0.05),
    clip_grad=dict(max_norm=3.0),
)
train_cfg = dict(max_epochs=30)
auto_scale_lr = dict(base_batch_size=32)
