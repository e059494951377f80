# MAE (He et al. 2022, https://arxiv.org/abs/2111.06377) on volumes: the
# 3D ViT of the SimCLR3D demo (4 blocks, width 64, 8-voxel patches: 64
# tokens on 32^3) encodes the 25% visible patches; a 1-block decoder of
# width 64 predicts the voxels of the masked ones. The target is the raw
# voxels, not MAE's per-patch normalised ones: 82% of the 8^3 patches of
# the synthetic set are flat (background or inside), so normalising them
# turns them into unit-variance noise that no model can predict and the
# loss stays near 1 (README.md). CPU demo on the synthetic shapes, ending
# with kNN top-1 and a linear probe of the CLS token on data/volumes/val
# (MAE is judged by linear probe; README.md for the figures).
#   python tools/misc/make_volume_dataset.py data/volumes
#   python tools/train.py configs/volumetric/mae3d_vit-tiny-p8_1xb32-150e_demo.py
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
    norm_pix=False,  # see the header
    backbone=dict(
        type='VisionTransformer3D',
        arch=dict(
            embed_dims=64, num_layers=4, num_heads=4, feedforward_channels=256
        ),
        img_size=_size,
        patch_size=_patch,
        drop_path_rate=0.0,
        # features for kNN and the linear probe: the CLS token, MAE's own
        # probe feature (He et al. 2022, App. A.1); see README.md
        out_type='cls_token',
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
    optimizer=dict(
        type='AdamW', lr=1.5e-3, betas=(0.9, 0.95), weight_decay=0.05
    ),
    clip_grad=dict(max_norm=3.0),
)
train_cfg = dict(max_epochs=150)
# MAE is judged by a linear probe (He et al. 2022, Sec. 4): both figures
_eval = [
    dict(type='KNNAccuracy', k=20, temperature=0.07, topk=(1,)),
    dict(type='LinearProbeAccuracy'),
]
val_evaluator = _eval
test_evaluator = _eval
auto_scale_lr = dict(base_batch_size=32)
