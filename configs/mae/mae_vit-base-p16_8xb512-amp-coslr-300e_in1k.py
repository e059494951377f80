# The published ImageNet-1k recipe, inherited from mmpretrain's own config
# (mmpretrain/.mim/configs/mae/mae_vit-base-p16_8xb512-amp-coslr-300e_in1k.py) and run in mmssl's scope.
# Data: data/imagenet/train/<class>/*.JPEG (labels unused).
#   bash tools/dist_train.sh configs/mae/mae_vit-base-p16_8xb512-amp-coslr-300e_in1k.py 8
_base_ = 'mmpretrain::mae/mae_vit-base-p16_8xb512-amp-coslr-300e_in1k.py'

default_scope = 'mmssl'

# Input sizes that follow the backbone ('auto', resolved when the model is
# built; docs/en/config.md), so model.backbone.arch=... alone gives a
# consistent model.
model = dict(neck=dict(embed_dim='auto'))
