# DINOv3 (https://arxiv.org/abs/2508.10104) on the bundled 32x32 demo
# digits (tools/misc/make_demo_dataset.py data/demo), on CPU: a 4-block
# DINOv3ViT (RoPE, one register token) of width 64 with 4-pixel patches
# (64 tokens), 2 global 32x32 + 4 local 16x16 crops without flips, DINO
# CLS + iBOT (batch-level masks, block_mask_collate) + KoLeo, and Gram
# anchoring in the second half (the Gram teacher is a snapshot of the EMA
# teacher taken at iteration 110, refreshed at 165); constant lr after the
# warm-up and a constant teacher momentum, as DINOv3. kNN top-1 on
# data/demo/val at the end. Small-data choices: 10 epochs (220
# iterations), lr 1e-3, teacher temperature 0.04, momentum 0.99, and no
# LayerScale (see the DINOv2 demo's header).
#   python tools/train.py configs/dinov3/dinov3_vit-tiny-p4_1xb64-10e_demo.py
_base_ = [
    '../dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py',
    '../_base_/schedules/warmup_cosine.py',
    '../_base_/schedules/teacher_student_hooks.py',
]  # data, runtime

_patch_size = 4
_n_prototypes = 256

# the DINOv2 demo's data (same crops, loader and masks), without flips
train_pipeline = _base_.train_pipeline  # noqa: F821
train_pipeline[1].flip_prob = 0.0  # DINOv3: no horizontal flip
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))

_head = dict(
    type='DINOHead',
    in_channels='auto',  # the backbone's width
    n_prototypes=_n_prototypes,
    hidden_channels=256,
    bottleneck_channels=64,
    norm_last_layer=False,
    weight_norm=False,  # DINOv3: a plain prototype layer
)
model = dict(
    _delete_=True,  # not the DINOv2 demo's model
    type='DINOFamily',
    data_preprocessor=_base_.pop('data_preprocessor'),  # noqa: F821
    num_global_crops=_base_.pop('_num_global_crops'),  # noqa: F821
    backbone=dict(
        type='DINOv3ViT',
        arch=dict(
            embed_dims=64, num_layers=4, num_heads=4, feedforward_channels=256
        ),
        patch_size=_patch_size,
        num_register_tokens=1,
        layer_scale_init_value=0.0,  # see the header
        drop_path_rate=0.0,
        out_type='raw',
    ),
    head=_head,
    patch_head=_head,  # DINOv3: a separate iBOT head
    terms=dict(
        dino_cls=dict(
            type='DINOLoss', out_dim=_n_prototypes, centering='sinkhorn_knopp'
        ),
        ibot_patch=dict(
            type='iBOTPatchLoss',
            out_dim=_n_prototypes,
            centering='sinkhorn_knopp',
        ),
        koleo=dict(type='KoLeoLoss', weight=0.1),
        gram=dict(type='GramLoss', weight=1.0),
    ),
)

# optimizer, run length, lr rule, logging and checkpoints: the DINOv2 demo's

# DINOv3: warm-up, then constant lr and weight decay
param_scheduler = _base_.pop('_warmup_cosine')['dinov3_demo']  # noqa: F821
custom_hooks = _base_.pop('_teacher_student_hooks')['dinov3_demo']  # noqa: F821
