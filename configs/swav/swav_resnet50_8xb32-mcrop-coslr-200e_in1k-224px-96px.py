# The published ImageNet-1k recipe, inherited from mmpretrain's own config
# (mmpretrain/.mim/configs/swav/swav_resnet50_8xb32-mcrop-coslr-200e_in1k-224px-96px.py) and run in mmssl's scope.
# Data: data/imagenet/train/<class>/*.JPEG (labels unused).
#   bash tools/dist_train.sh configs/swav/swav_resnet50_8xb32-mcrop-coslr-200e_in1k-224px-96px.py 8
_base_ = (
    'mmpretrain::swav/swav_resnet50_8xb32-mcrop-coslr-200e_in1k-224px-96px.py'
)

default_scope = 'mmssl'
