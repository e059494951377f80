# SwinUNETR pretraining (Tang et al., CVPR 2022) on volumes: MONAI's Swin
# encoder (feature size 12, depths 2-2-2-2, 4^3 windows, 2-voxel patches)
# on two 32^3 crops per volume; each crop is rotated by a random multiple
# of 90 degrees in the axial plane and 30 % of it is replaced by noise
# boxes. Three heads on the last stage: rotation classification,
# contrastive (NT-Xent at temperature 0.5) and inpainting (L1 against the
# crop before the cutout), weights 1, 1, 1. CPU demo on the synthetic
# shapes, ending with kNN top-1 of the last stage's mean on
# data/volumes/val (README.md for the figures).
#   python tools/misc/make_volume_dataset.py data/volumes
#   python tools/train.py \
#       configs/volumetric/swinunetr3d_swinvit-tiny_1xb16-10e_demo.py
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
        flip_prob=0.0,  # the rotation task owns the orientation
        rot90_prob=0.0,
        intensity_scale=0.3,
        intensity_shift=0.2,
    ),
    dict(type='PackInputs'),
]
train_dataloader = dict(batch_size=16, dataset=dict(pipeline=train_pipeline))

model = dict(
    type='SwinUNETRPretrain',
    data_preprocessor=dict(type='SelfSupDataPreprocessor'),
    backbone=dict(
        type='SwinViT3D',
        feature_size=12,
        depths=(2, 2, 2, 2),
        num_heads=(1, 2, 4, 8),
        window_size=4,
        out_indices=(4,),  # kNN features: the mean of the last stage
    ),
    neck=dict(  # contrastive projector
        type='NonLinearNeck',
        in_channels='auto',
        hid_channels=256,
        out_channels=64,
        num_layers=2,
        with_avg_pool=False,
    ),
    rot_head=dict(type='PretextClsHead'),
    decoder=dict(type='ConvTransposeDecoder3D'),
    con_loss=dict(type='NTXentLoss', temperature=0.5),
    num_rotations=4,
    rot_plane=(0, 1),
    mask_ratio=0.3,
    block_size=(0.05, 0.25),
    rot_weight=1.0,
    con_weight=1.0,
    rec_weight=1.0,
)

optim_wrapper = dict(
    optimizer=dict(type='AdamW', lr=2e-3, weight_decay=0.05),
    clip_grad=dict(max_norm=3.0),
)
train_cfg = dict(max_epochs=10)
auto_scale_lr = dict(base_batch_size=16)
