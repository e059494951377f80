# The published ImageNet-1k recipe, inherited from mmpretrain's own config
# (mmpretrain/.mim/configs/mocov3/mocov3_resnet50_8xb512-amp-coslr-100e_in1k.py) and run in mmssl's scope.
# Data: data/imagenet/train/<class>/*.JPEG (labels unused).
#   bash tools/dist_train.sh configs/mocov3/mocov3_resnet50_8xb512-amp-coslr-100e_in1k.py 8
_base_ = [
    'mmpretrain::mocov3/mocov3_resnet50_8xb512-amp-coslr-100e_in1k.py',
    '../_base_/datasets/imagenet_contrastive_views_hue_safe.py',
    '../_base_/schedules/warmup_cosine.py',
    '../_base_/ssl_runner.py',
]

# mmssl's scope over the mmpretrain base's (mmengine takes a key from one
# base only); the runner and its guard come from ssl_runner.py
default_scope = 'mmssl'

# The inherited pipeline with HueSafeColorJitter for ColorJitter (mmcv 2.2's
# hue shift fails under numpy >= 2; see the base file named above).
train_pipeline = _base_.pop('_hue_safe_pipelines')['mocov3_resnet']  # noqa: F821
# _scope_: the dataset dict inherited from mmpretrain's config carries
# _scope_='mmpretrain', whose transform registry lacks HueSafeColorJitter
train_dataloader = dict(dataset=dict(_scope_='mmssl', pipeline=train_pipeline))

# Input sizes that follow the backbone ('auto', resolved when the model is
# built; docs/en/config.md), so model.backbone.depth=18 alone gives a
# consistent model.
model = dict(
    neck=dict(in_channels='auto'),
    head=dict(predictor=dict(in_channels='auto')),
)

# Schedules as fractions of the run (resolved when the runner is built;
# docs/en/config.md): train_cfg.max_epochs=N alone moves them. At the
# published 100 epochs they are the published numbers.
param_scheduler = _base_.pop('_warmup_cosine')['eva']  # noqa: F821
# The published checkpoint interval (1 of 100 epochs) as a run fraction
default_hooks = dict(checkpoint=dict(interval='1%'))
