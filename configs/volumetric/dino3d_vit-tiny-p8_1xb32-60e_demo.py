# DINO (Caron et al. 2021, https://arxiv.org/abs/2104.14294) on volumes,
# with DINOv2's KoLeo term (Oquab et al. 2023,
# https://arxiv.org/abs/2304.07193): the 4-block 3D ViT of width 64 with
# 8-voxel patches of the SimCLR3D demo, 2 global 32^3 + 4 local 16^3 crops
# per volume (flips, 90-degree rotations, intensity jitter), an EMA teacher
# and a DINO head of 32 prototypes with centering, teacher temperature
# 0.02 and an unnormalised last layer. CPU demo on the
# synthetic shapes (4 classes, 200 train volumes), ending with kNN top-1 of
# the teacher's CLS token on data/volumes/val (README.md for the figures,
# for why the KoLeo term and the Xavier init are there, and for why 32
# prototypes: with 256 a seed's gain over random init was 0 to 11 points).
#   python tools/misc/make_volume_dataset.py data/volumes
#   python tools/train.py configs/volumetric/dino3d_vit-tiny-p8_1xb32-60e_demo.py
_base_ = [
    '../_base_/datasets/volume_train.py',
    '../_base_/schedules/demo_4e.py',
    '../_base_/schedules/teacher_student_hooks/dino3d_demo.py',
]

_n_prototypes = 32
train_pipeline = [
    dict(
        type='MultiCrop3D',
        global_size=32,
        local_size=16,
        num_global=2,
        num_local=4,
        global_scale=(0.3, 1.0),
        local_scale=(0.05, 0.3),
        intensity_scale=0.3,
        intensity_shift=0.2,
    ),
    dict(type='PackInputs'),
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))

model = dict(
    type='DINOFamily',
    data_preprocessor=dict(type='SelfSupDataPreprocessor'),
    num_global_crops=2,
    backbone=dict(
        type='VisionTransformer3D',
        arch=dict(
            embed_dims=64, num_layers=4, num_heads=4, feedforward_channels=256
        ),
        img_size=32,
        patch_size=8,
        drop_path_rate=0.0,
        out_type='cls_token',
        # at width 64, trunc-normal(0.02) blocks start as near-identities
        init_cfg=[dict(type='Xavier', layer='Linear', distribution='uniform')],
    ),
    head=dict(
        type='DINOHead',
        in_channels='auto',
        n_prototypes=_n_prototypes,
        hidden_channels=256,
        bottleneck_channels=64,
        norm_last_layer=False,
    ),
    terms=dict(
        dino_cls=dict(
            type='DINOLoss', out_dim=_n_prototypes, centering='centering'
        ),
        koleo=dict(type='KoLeoLoss', weight=1.0),
    ),
)

optim_wrapper = dict(
    type='NaNGuardOptimWrapper',
    max_consecutive_skips=10,
    optimizer=dict(type='AdamW', lr=1e-3, weight_decay=0.04),
    clip_grad=dict(max_norm=3.0),
    paramwise_cfg=dict(flat_decay_mult=0.0),
)
train_cfg = dict(max_epochs=60)
auto_scale_lr = dict(base_batch_size=32)
