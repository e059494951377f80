# DINOv2 (Oquab et al. 2023, https://arxiv.org/abs/2304.07193) ViT-S/14 on
# ImageNet-1k train images (labels unused), 100 epochs, total batch 1024
# (8 GPUs x 128). DINOv2 defaults: 2x224 global + 8x96 local crops, 65536
# prototypes (shared CLS/patch head), Sinkhorn-Knopp teacher targets, iBOT
# masks (ratio 0.1-0.5 on half of the global crops), KoLeo 0.1,
# lr 0.004 at batch 1024 (sqrt scaling), teacher momentum 0.992 -> 1,
# teacher temperature 0.04 -> 0.07 over 30 epochs, weight decay 0.04 -> 0.4,
# layer-wise lr decay 0.9, patch-embed lr x0.2, gradient clip 3.0, last
# layer frozen for the first epoch. See configs/dinov2/README.md.
#   bash tools/dist_train.sh configs/dinov2/dinov2_vit-s14_8xb128-100e_in1k.py 8
_base_ = [
    '../_base_/datasets/custom_folder_multicrop.py',
    '../_base_/default_runtime.py',
]

data_root = 'data/imagenet/train'
patch_size = 14
n_prototypes = 65536
embed_dims = 384
num_global_crops = 2

train_dataloader = dict(batch_size=128, dataset=dict(data_root=data_root))

model = dict(
    type='DINOv2',
    data_preprocessor=dict(
        type='SelfSupDataPreprocessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        to_rgb=True,
    ),
    num_global_crops=num_global_crops,
    backbone=dict(
        type='DINOVisionTransformer',
        arch='small',
        img_size=224,
        patch_size=patch_size,
        num_register_tokens=0,
        layer_scale_init_value=1e-5,
        drop_path_rate=0.1,
        with_cp=False,
        out_type='raw',
        # Continued pretraining from converted official weights
        # (tools/model_converters/dinov2_to_mmssl.py): student and teacher
        # both start from it, heads are fresh:
        # init_cfg=dict(type='Pretrained', checkpoint='ckpt.pth',
        #               prefix='backbone.'),
    ),
    head=dict(
        type='DINOHead',
        in_channels=embed_dims,
        n_prototypes=n_prototypes,
        hidden_channels=2048,
        bottleneck_channels=256,
        nlayers=3,
        norm_last_layer=False,
    ),
    patch_head=None,  # None: share `head`; a DINOHead dict: separate head
    loss=dict(
        type='DINOLoss',
        out_dim=n_prototypes,
        student_temp=0.1,
        centering='sinkhorn_knopp',
        sk_iters=3,
    ),
    ibot_loss=dict(
        type='iBOTPatchLoss',
        out_dim=n_prototypes,
        student_temp=0.1,
        centering='sinkhorn_knopp',
        sk_iters=3,
    ),
    koleo_loss=dict(type='KoLeoLoss'),
    loss_weights=dict(dino=1.0, ibot=1.0, koleo=0.1),
)

max_epochs = 100
warmup_epochs = 10
optim_wrapper = dict(
    # Skips steps whose loss is NaN/inf on any rank, stops after 10 in a
    # row. For fp16: --cfg-options optim_wrapper.type=NaNGuardAmpOptimWrapper
    type='NaNGuardOptimWrapper',
    max_consecutive_skips=10,
    optimizer=dict(
        type='AdamW', lr=0.004, betas=(0.9, 0.999), weight_decay=0.04
    ),
    clip_grad=dict(max_norm=3.0),
    constructor='LayerDecayOptimWrapperConstructor',
    paramwise_cfg=dict(
        layer_decay_rate=0.9,
        flat_decay_mult=0.0,  # no decay on biases, norms, LayerScale
        custom_keys={'patch_embed': dict(lr_mult=0.2)},
    ),
)
param_scheduler = [
    dict(
        type='LinearLR',
        start_factor=1e-6,
        by_epoch=True,
        begin=0,
        end=warmup_epochs,
        convert_to_iter_based=True,
    ),
    dict(
        type='CosineAnnealingLR',
        T_max=max_epochs - warmup_epochs,
        eta_min=1e-6,
        by_epoch=True,
        begin=warmup_epochs,
        end=max_epochs,
        convert_to_iter_based=True,
    ),
    # weight decay 0.04 -> 0.4 (groups without decay stay at 0)
    dict(
        type='CosineAnnealingParamScheduler',
        param_name='weight_decay',
        eta_min_ratio=10.0,
        T_max=max_epochs,
        by_epoch=True,
        begin=0,
        end=max_epochs,
        convert_to_iter_based=True,
    ),
]
custom_hooks = [
    dict(type='BadFileSummaryHook', interval=50),
    dict(type='TeacherEMAHook', momentum=0.992, end_momentum=1.0),
    dict(
        type='TeacherTempWarmupHook',
        warmup_temp=0.04,
        temp=0.07,
        warmup_epochs=30,
        by_epoch=False,
    ),
    dict(type='FreezeLastLayerHook', freeze_epochs=1),
]
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=max_epochs)
# lr 0.004 is for a total batch of 1024; `tools/train.py --auto-scale-lr
# sqrt` rescales it by sqrt(total batch / 1024) (DINOv2's rule).
auto_scale_lr = dict(base_batch_size=1024, rule='sqrt')
default_hooks = dict(checkpoint=dict(interval=5, max_keep_ckpts=3))
env_cfg = dict(dist_cfg=dict(backend='nccl'))
