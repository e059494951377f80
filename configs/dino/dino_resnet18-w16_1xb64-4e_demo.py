# DINO (Caron et al. 2021, https://arxiv.org/abs/2104.14294) with a CNN on
# the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py data/demo):
# the CIFAR-style ResNet-18 of width 16 of the SimCLR demo, 4 epochs on CPU,
# 2 global crops, SGD as in DINO's ResNet-50 recipe, then kNN on
# data/demo/val with the teacher backbone.
#   python tools/train.py configs/dino/dino_resnet18-w16_1xb64-4e_demo.py
_base_ = [
    '../dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py',
    '../_base_/schedules/warmup_cosine.py',
    '../_base_/schedules/teacher_student_hooks.py',
]  # data, runtime

# the DINOv2 demo's crops, the 2 global ones only
train_pipeline = _base_.train_pipeline  # noqa: F821
train_pipeline[1]['num_local_crops'] = 0
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
_n_prototypes = 1024
model = dict(
    _delete_=True,
    type='DINO',
    data_preprocessor={{_base_.data_preprocessor}},
    num_global_crops=2,
    backbone=dict(
        type='ResNet_CIFAR',
        depth=18,
        stem_channels=16,
        base_channels=16,
        zero_init_residual=True,
    ),
    head=dict(
        type='DINOHead',
        in_channels='auto',
        n_prototypes=_n_prototypes,
        hidden_channels=256,
        bottleneck_channels=64,
        use_bn=True,
        norm_last_layer=True,
    ),
    loss=dict(type='DINOLoss', out_dim=_n_prototypes, centering='centering'),
)
optim_wrapper = dict(
    _delete_=True,
    type='NaNGuardOptimWrapper',
    max_consecutive_skips=10,
    optimizer=dict(type='SGD', lr=0.1, momentum=0.9, weight_decay=1e-4),
    paramwise_cfg=dict(flat_decay_mult=0.0),
)
param_scheduler = _base_.pop('_warmup_cosine')['dino_cnn_demo']  # noqa: F821
custom_hooks = _base_.pop('_teacher_student_hooks')['dino_cnn_demo']  # noqa: F821
train_cfg = dict(max_epochs=4)  # the rest: fractions, from the base
