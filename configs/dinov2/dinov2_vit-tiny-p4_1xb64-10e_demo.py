# DINOv2 (https://arxiv.org/abs/2304.07193) on the bundled 32x32 demo digits
# (tools/misc/make_demo_dataset.py data/demo): a 4-block ViT of width 64
# with 4-pixel patches (64 tokens), 2 global 32x32 crops + 4 local 16x16
# crops, iBOT masks, Sinkhorn-Knopp targets and KoLeo; kNN top-1 on
# data/demo/val at the end. Small-data choices (not DINOv2's ImageNet
# recipe, see README.md): 10 epochs (220 iterations), lr 1e-3, teacher
# temperature fixed at 0.04, teacher momentum 0.99 -> 1, and no LayerScale
# (with DINOv2's 1e-5 the blocks start as near-identities and the
# random-init kNN baseline is at chance, which would make the
# trained-vs-random comparison meaningless).
#   python tools/train.py configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py
_base_ = [
    '../_base_/datasets/demo_train.py',
    '../_base_/default_runtime.py',
    '../_base_/schedules/dino_family_lr_wd.py',
    '../_base_/schedules/teacher_student_hooks/dinov2_demo.py',
    '../_base_/schedules/dinov2_adamw.py',
]

_num_global_crops = 2
_num_local_crops = 4
_patch_size = 4
_n_prototypes = 256


train_pipeline = [
    dict(type='LoadImageRobust'),
    dict(
        type='MultiCrop',
        num_global_crops=_num_global_crops,
        num_local_crops=_num_local_crops,
        global_size=32,
        local_size=16,
        global_scale=(0.4, 1.0),
        local_scale=(0.1, 0.4),
        blur_kernel_size=3,
    ),
    dict(type='PackInputs'),
]
train_dataloader = dict(
    # reference DINOv2 iBOT masks: half of the global crops of a batch
    collate_fn=dict(
        type='mmssl.block_mask_collate',
        patch_size=_patch_size,
        mask_ratio=(0.1, 0.5),
        mask_prob=0.5,
        min_num_patches=4,
    ),
    dataset=dict(pipeline=train_pipeline),
)

_head = dict(
    type='DINOHead',
    in_channels='auto',  # the backbone's width
    n_prototypes=_n_prototypes,
    hidden_channels=256,
    bottleneck_channels=64,
    norm_last_layer=False,
)
model = dict(
    type='DINOv2',
    data_preprocessor={{_base_.data_preprocessor}},
    num_global_crops=_num_global_crops,
    backbone=dict(
        type='DINOVisionTransformer',
        arch=dict(
            embed_dims=64, num_layers=4, num_heads=4, feedforward_channels=256
        ),
        img_size=32,
        patch_size=_patch_size,
        layer_scale_init_value=0.0,  # see the header
        drop_path_rate=0.0,
        drop_path_mode='static',  # fixed shapes, exact rate, no host sync
        out_type='raw',
    ),
    head=_head,
    patch_head=None,  # shared with the CLS head; a dict gives a separate one
    loss=dict(
        type='DINOLoss', out_dim=_n_prototypes, centering='sinkhorn_knopp'
    ),
    ibot_loss=dict(
        type='iBOTPatchLoss', out_dim=_n_prototypes, centering='sinkhorn_knopp'
    ),
    koleo_loss=dict(type='KoLeoLoss'),
    loss_weights=dict(dino=1.0, ibot=1.0, koleo=0.1),
)

optim_wrapper = dict(optimizer=dict(lr=1e-3))
param_scheduler = _base_.pop('_dino_family_schedules')['demo']  # noqa: F821
# Every length above and below is a fraction of the run (docs/en/config.md)
train_cfg = dict(
    type='EpochBasedTrainLoop', max_epochs=10, val_interval='100%'
)
# DINOv2 rule: lr scales with sqrt(total batch / base_batch_size) when
# tools/train.py --auto-scale-lr is given.
auto_scale_lr = dict(base_batch_size=64, rule='sqrt')
default_hooks = dict(
    logger=dict(interval=10),
    checkpoint=dict(interval='100%', max_keep_ckpts=1),
)
randomness = dict(seed=0)
