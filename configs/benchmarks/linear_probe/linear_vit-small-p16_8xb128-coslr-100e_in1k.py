# Linear probe of a frozen ViT-S/16 on ImageNet-1k: a linear layer on the
# CLS token, the whole backbone frozen (frozen_stages=12, incl. the final
# norm). Point it at a pretrained checkpoint:
#   bash tools/dist_train.sh \
#       configs/benchmarks/linear_probe/linear_vit-small-p16_8xb128-coslr-100e_in1k.py 8 \
#       --cfg-options model.backbone.init_cfg.checkpoint=CKPT \
#       model.backbone.init_cfg.prefix=teacher.backbone.
_base_ = [
    '../../_base_/default_runtime.py',
    '../../_base_/datasets/imagenet_224px_cls.py',
]

model = dict(
    type='ImageClassifier',
    data_preprocessor=dict(
        type='ClsDataPreprocessor',
        num_classes=1000,
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        to_rgb=True,
    ),
    backbone=dict(
        type='VisionTransformer',
        arch='deit-small',
        img_size=224,
        patch_size=16,
        out_type='cls_token',
        frozen_stages=12,
        init_cfg=dict(type='Pretrained', checkpoint='', prefix='backbone.'),
    ),
    neck=None,
    head=dict(
        type='LinearClsHead',
        num_classes=1000,
        in_channels='auto',
        loss=dict(type='CrossEntropyLoss'),
        init_cfg=dict(type='TruncNormal', layer='Linear', std=0.01),
    ),
)

# lr 0.1 at batch 1024 (8 GPUs x 128); scaled linearly with --auto-scale-lr
optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='SGD', lr=0.1, momentum=0.9, weight_decay=0.0),
)
_max_epochs = 100  # the schedule and intervals below are run fractions
param_scheduler = [
    dict(
        type='CosineAnnealingLR',
        by_epoch=True,
        begin=0,
        end='100%',
    )
]
train_cfg = dict(
    type='EpochBasedTrainLoop', max_epochs=_max_epochs, val_interval='10%'
)
val_cfg = dict()
test_cfg = dict()
auto_scale_lr = dict(base_batch_size=1024)
default_hooks = dict(
    checkpoint=dict(type='CheckpointHook', interval='10%', max_keep_ckpts=3)
)
# tools/test.py on this config also loads init_cfg (test-only runs).
custom_hooks = [dict(type='PretrainedInitHook')]
