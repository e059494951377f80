# DINOv3 (Simeoni et al. 2025, https://arxiv.org/abs/2508.10104), stage 1
# of 3: pretraining of a ViT-S/16 (RoPE, 4 registers, LayerScale) on any
# folder(s) of images, one GPU, batch 64 (10k-1M images). Terms: DINO CLS
# + iBOT + KoLeo (0.1). DINOv3 defaults: no horizontal flip, constant lr
# and weight decay after the warm-up, a constant teacher momentum, the
# reference batch-level iBOT masks (half of the global crops masked, ratio
# spread over 0.1-0.5: block_mask_collate), separate CLS and patch heads.
# Next: dinov3_vit-s16_1xb64-100e_gram_custom.py (Gram anchoring), then
# dinov3_vit-s16_1xb64-100e_highres_custom.py. See docs/en/dinov3.md.
#   python tools/train.py configs/dinov3/dinov3_vit-s16_1xb64-100e_custom.py \
#       --work-dir work_dirs/dinov3_vit-s16_1xb64-100e_custom \
#       --cfg-options train_dataloader.dataset.data_root=/data/my_images
_base_ = [
    '../_base_/datasets/custom_folder_multicrop.py',
    '../_base_/schedules/dino_family_100e.py',
    '../_base_/schedules/warmup_cosine.py',
    '../_base_/schedules/teacher_student_hooks.py',
    '../_base_/datasets/multicrop_224px.py',
    '../_base_/schedules/dinov2_adamw.py',
]
_patch_size = 16
_n_prototypes = 16384  # small-compute; DINOv3's ViT-7B uses 256k / 96k

train_pipeline = _base_.pop('_multicrop_224px')['dinov3']  # noqa: F821
train_dataloader = dict(
    batch_size=64,
    collate_fn=dict(
        type='mmssl.block_mask_collate',
        patch_size=_patch_size,
        mask_ratio=(0.1, 0.5),
        mask_prob=0.5,
    ),
    dataset=dict(data_root='data/custom', pipeline=train_pipeline),
)

_head = dict(
    type='DINOHead',
    in_channels='auto',  # the backbone's width
    n_prototypes=_n_prototypes,
    hidden_channels=2048,
    bottleneck_channels=256,
    nlayers=3,
    norm_last_layer=False,
    weight_norm=False,  # DINOv3: a plain prototype layer
)
model = dict(
    type='DINOFamily',
    data_preprocessor=dict(
        type='SelfSupDataPreprocessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        to_rgb=True,
    ),
    num_global_crops=2,
    backbone=dict(
        type='DINOv3ViT',
        arch='small',
        patch_size=_patch_size,
        num_register_tokens=4,
        layer_scale_init_value=1e-5,
        drop_path_rate=0.1,
        out_type='raw',
    ),
    head=_head,
    patch_head=_head,  # DINOv3: a separate iBOT head
    terms=dict(
        dino_cls=dict(
            type='DINOLoss',
            out_dim=_n_prototypes,
            student_temp=0.1,
            centering='sinkhorn_knopp',
        ),
        ibot_patch=dict(
            type='iBOTPatchLoss',
            out_dim=_n_prototypes,
            student_temp=0.1,
            centering='sinkhorn_knopp',
        ),
        koleo=dict(type='KoLeoLoss', weight=0.1),
    ),
)

# 0.004 at batch 1024, sqrt rule (DINOv2/v3): 0.001 at batch 64
optim_wrapper = dict(optimizer=dict(lr=0.004 * (64 / 1024) ** 0.5))
# DINOv3: linear warm-up over the first 10%, then lr and weight decay stay
# constant (no cosine), so a run can be extended or cut at any point.
param_scheduler = _base_.pop('_warmup_cosine')['dinov3']  # noqa: F821
custom_hooks = _base_.pop('_teacher_student_hooks')['dinov3']  # noqa: F821
auto_scale_lr = dict(base_batch_size=64, rule='sqrt')
