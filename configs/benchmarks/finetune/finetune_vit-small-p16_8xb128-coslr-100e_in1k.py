# End-to-end fine-tuning of a pretrained ViT-S/16 (DINO, iBOT, DINOv2 at
# patch 16 without registers) as an mmpretrain ImageClassifier on
# ImageNet-1k, the recipe of BEiT (Bao et al., 2022) and MAE (He et al.,
# 2022, Appendix A.1): AdamW at lr 5e-4 x batch / 256 (2e-3 at batch
# 1024), layer-wise lr decay 0.75 (mmssl's LayerDecayOptimWrapperConstructor),
# weight decay 0.05, drop path 0.1, RandAugment, Mixup 0.8 / CutMix 1.0,
# label smoothing 0.1, 5 warm-up epochs of 100, cosine decay.
#   bash tools/dist_train.sh \
#       configs/benchmarks/finetune/finetune_vit-small-p16_8xb128-coslr-100e_in1k.py 8 \
#       --cfg-options model.init_cfg.checkpoint=CKPT
# The backbone is read from the teacher of a DINO-family checkpoint
# (model.init_cfg.prefix='teacher.': its teacher.backbone.* keys; None
# for MAE and other checkpoints whose backbone is backbone.*) with a load
# report; a run where fewer than 90 % of the classifier's tensors (all
# but the head's) loaded stops (min_match).
_base_ = [
    '../../_base_/default_runtime.py',
    '../../_base_/datasets/imagenet_224px_cls.py',
    '../../_base_/schedules/finetune_layer_decay.py',
    '../../_base_/schedules/warmup_cosine/finetune_in1k.py',
]

_num_classes = 1000
_bgr_mean = [103.53, 116.28, 123.675]
# the base's crop and flip, then RandAugment and RandomErasing
train_pipeline = _base_.train_pipeline[:-1] + [  # noqa: F821
    dict(
        type='RandAugment',
        policies='timm_increasing',
        num_policies=2,
        total_level=10,
        magnitude_level=9,
        magnitude_std=0.5,
        hparams=dict(pad_val=[round(x) for x in _bgr_mean]),
    ),
    dict(
        type='RandomErasing',
        erase_prob=0.25,
        mode='rand',
        min_area_ratio=0.02,
        max_area_ratio=1 / 3,
        fill_color=_bgr_mean,
        fill_std=[57.375, 57.12, 58.395],
    ),
    dict(type='PackInputs'),
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))

model = dict(
    type='ImageClassifier',
    # the whole classifier from the checkpoint's 'backbone.*' keys (the
    # head stays fresh); on the classifier, not the backbone, so that the
    # backbone's own init (mmpretrain re-draws pos_embed) runs first
    init_cfg=dict(
        type='PretrainedStrip',
        checkpoint='',
        prefix='teacher.',
        strip_prefixes=('module.',),
        min_match=0.9,
    ),
    data_preprocessor=dict(
        type='ClsDataPreprocessor',
        num_classes=_num_classes,
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        to_rgb=True,
        batch_augments=dict(
            augments=[
                dict(type='Mixup', alpha=0.8),
                dict(type='CutMix', alpha=1.0),
            ]
        ),
    ),
    backbone=dict(
        type='DINOVisionTransformer',
        arch='small',
        img_size=224,
        patch_size=16,
        layer_scale_init_value=0.0,  # DINO ViTs have no LayerScale
        drop_path_rate=0.1,
        out_type='cls_token',
    ),
    neck=None,
    head=dict(
        type='LinearClsHead',
        num_classes=_num_classes,
        in_channels='auto',
        loss=dict(
            type='LabelSmoothLoss', label_smooth_val=0.1, mode='original'
        ),
        init_cfg=dict(type='TruncNormal', layer='Linear', std=2e-5),
    ),
)

# lr 2e-3 at batch 1024 (8 GPUs x 128), scaled with --auto-scale-lr
optim_wrapper = dict(type='AmpOptimWrapper', optimizer=dict(lr=2e-3))
_max_epochs = 100  # the schedule and intervals below are run fractions
train_cfg = dict(
    type='EpochBasedTrainLoop', max_epochs=_max_epochs, val_interval='10%'
)
auto_scale_lr = dict(base_batch_size=1024)
default_hooks = dict(
    checkpoint=dict(type='CheckpointHook', interval='10%', max_keep_ckpts=3)
)
