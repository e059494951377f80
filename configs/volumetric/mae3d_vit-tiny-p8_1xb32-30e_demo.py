# MAE (He et al. 2022) on volumes: the 3D ViT of the SimCLR3D demo (4
# blocks, width 64, 8-voxel patches: 64 tokens on 32^3) encodes the 25%
# visible patches; a 1-block decoder of width 64 predicts the voxels of the
# masked ones (normalized-voxel MSE). CPU demo on the synthetic shapes,
# ending with kNN top-1 of the mean patch token on data/volumes/val
# (README.md for the figures).
#   python tools/misc/make_volume_dataset.py data/volumes
#   python tools/train.py configs/volumetric/mae3d_vit-tiny-p8_1xb32-30e_demo.py
_base_ = [
    '../_base_/datasets/volume_train.py',
    '../_base_/schedules/demo_4e.py',
]

_size = 32
_patch = 8

train_pipeline = [
    dict(
        type='MultiCrop3D',
        global_size=_size,
        num_global=1,
        num_local=0,
        global_scale=(0.5, 1.0),
        intensity_prob=0.0,
    ),
    dict(type='PackInputs'),
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))

model = dict(
    type='MAE3D',
    data_preprocessor=dict(type='SelfSupDataPreprocessor'),
    mask_ratio=0.75,
    norm_pix=True,
    backbone=dict(
        type='VisionTransformer3D',
        arch=dict(
            embed_dims=64, num_layers=4, num_heads=4, feedforward_channels=256
        ),
        img_size=_size,
        patch_size=_patch,
        drop_path_rate=0.0,
        out_type='avg_featmap',  # kNN features: the mean patch token
    ),
    neck=dict(
        type='MAEDecoder3D',
        in_channels='auto',
        num_patches=(_size // _patch) ** 3,
        patch_size=_patch,
        decoder_dims=64,
        num_layers=1,
        num_heads=4,
    ),
)

optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(
        type='AdamW', lr=1.5e-3, betas=(0.9, 0.95), weight_decay=0.05
    ),
    clip_grad=dict(max_norm=3.0),
)
train_cfg = dict(max_epochs=30)
auto_scale_lr = dict(base_batch_size=32)
randomness = dict(seed=0)
