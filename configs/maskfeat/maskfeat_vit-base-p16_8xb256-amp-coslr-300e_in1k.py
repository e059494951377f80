# The published ImageNet-1k recipe, inherited from mmpretrain's own config
# (mmpretrain/.mim/configs/maskfeat/maskfeat_vit-base-p16_8xb256-amp-coslr-300e_in1k.py) and run in mmssl's scope.
# Data: data/imagenet/train/<class>/*.JPEG (labels unused).
#   bash tools/dist_train.sh configs/maskfeat/maskfeat_vit-base-p16_8xb256-amp-coslr-300e_in1k.py 8
_base_ = (
    'mmpretrain::maskfeat/maskfeat_vit-base-p16_8xb256-amp-coslr-300e_in1k.py'
)

default_scope = 'mmssl'

# Input sizes that follow the backbone ('auto', resolved when the model is
# built; docs/en/config.md), so model.backbone.arch=... alone gives a
# consistent model. FloatHOGGenerator: mmpretrain's HOG targets, also under
# the bfloat16 CPU autocast of this AMP config on a machine without a GPU.
model = dict(
    neck=dict(in_channels='auto'),
    target_generator=dict(type='FloatHOGGenerator', _scope_='mmssl'),
)
