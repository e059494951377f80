# The published ImageNet-1k recipe, inherited from mmpretrain's own config
# (mmpretrain/.mim/configs/simmim/simmim_swin-base-w6_8xb256-amp-coslr-100e_in1k-192px.py) and run in mmssl's scope.
# Data: data/imagenet/train/<class>/*.JPEG (labels unused).
#   bash tools/dist_train.sh configs/simmim/simmim_swin-base-w6_8xb256-amp-coslr-100e_in1k-192px.py 8
_base_ = [
    'mmpretrain::simmim/simmim_swin-base-w6_8xb256-amp-coslr-100e_in1k-192px.py',
    '../_base_/schedules/warmup_cosine.py',
    '../_base_/ssl_runner.py',
]

# mmssl's scope over the mmpretrain base's (mmengine takes a key from one
# base only); the runner and its guard come from ssl_runner.py
default_scope = 'mmssl'

# Input sizes that follow the backbone ('auto', resolved when the model is
# built; docs/en/config.md), so model.backbone.arch=... alone gives a
# consistent model.
model = dict(neck=dict(in_channels='auto'))

# Schedules as fractions of the run (resolved when the runner is built;
# docs/en/config.md): train_cfg.max_epochs=N alone moves them. At the
# published 100 epochs they are the published numbers.
param_scheduler = _base_.pop('_warmup_cosine')['simmim']  # noqa: F821
# The published checkpoint interval (10 of 100 epochs) as a run fraction
default_hooks = dict(checkpoint=dict(interval='10%'))
