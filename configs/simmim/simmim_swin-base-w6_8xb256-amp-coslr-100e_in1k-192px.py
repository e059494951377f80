# The published ImageNet-1k recipe, inherited from mmpretrain's own config
# (mmpretrain/.mim/configs/simmim/simmim_swin-base-w6_8xb256-amp-coslr-100e_in1k-192px.py) and run in mmssl's scope.
# Data: data/imagenet/train/<class>/*.JPEG (labels unused).
#   bash tools/dist_train.sh configs/simmim/simmim_swin-base-w6_8xb256-amp-coslr-100e_in1k-192px.py 8
_base_ = 'mmpretrain::simmim/simmim_swin-base-w6_8xb256-amp-coslr-100e_in1k-192px.py'

default_scope = 'mmssl'

# Input sizes that follow the backbone ('auto', resolved when the model is
# built; docs/en/config.md), so model.backbone.arch=... alone gives a
# consistent model.
model = dict(neck=dict(in_channels='auto'))
