# The published ImageNet-1k recipe, inherited from mmpretrain's own config
# (mmpretrain/.mim/configs/spark/spark_sparse-resnet50_8xb512-amp-coslr-800e_in1k.py) and run in mmssl's scope.
# Data: data/imagenet/train/<class>/*.JPEG (labels unused).
#   bash tools/dist_train.sh configs/spark/spark_sparse-resnet50_8xb512-amp-coslr-800e_in1k.py 8
_base_ = (
    'mmpretrain::spark/spark_sparse-resnet50_8xb512-amp-coslr-800e_in1k.py'
)

default_scope = 'mmssl'

# Input sizes that follow the backbone ('auto', resolved when the model is
# built; docs/en/config.md), so model.backbone.depth=18 alone gives a
# consistent model.
model = dict(enc_dec_norm_dim='auto')
