# The published ImageNet-1k recipe, inherited from mmpretrain's own config
# (mmpretrain/.mim/configs/cae/cae_beit-base-p16_8xb256-amp-coslr-300e_in1k.py) and run in mmssl's scope.
# Data: data/imagenet/train/<class>/*.JPEG (labels unused).
#   bash tools/dist_train.sh configs/cae/cae_beit-base-p16_8xb256-amp-coslr-300e_in1k.py 8
_base_ = [
    'mmpretrain::cae/cae_beit-base-p16_8xb256-amp-coslr-300e_in1k.py',
    '../_base_/schedules/warmup_cosine.py',
    '../_base_/ssl_runner.py',
]

# mmssl's scope over the mmpretrain base's (mmengine takes a key from one
# base only); the runner and its guard come from ssl_runner.py
default_scope = 'mmssl'

# The target is a pretrained DALL-E tokenizer; PretrainedDALLETarget checks that its checkpoint
# exists (the URL below is downloaded on first use) and otherwise says
# what to provide.  Offline: download it and pass
#   --cfg-options model.target_generator.init_cfg.checkpoint=/path/to/file
# Input sizes that follow the backbone ('auto', resolved when the model is
# built; docs/en/config.md), so model.backbone.arch=... alone gives a
# consistent model.
model = dict(
    _scope_='mmssl',
    target_generator=dict(type='PretrainedDALLETarget'),
    neck=dict(embed_dims='auto'),
)

# Schedules as fractions of the run (resolved when the runner is built;
# docs/en/config.md): train_cfg.max_epochs=N alone moves them. At the
# published 300 epochs they are the published numbers.
param_scheduler = _base_.pop('_warmup_cosine')['beit']  # noqa: F821
# The published checkpoint interval (10 of 300 epochs) as a run fraction
default_hooks = dict(checkpoint=dict(interval='1/30'))
