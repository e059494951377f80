# The published ImageNet-1k recipe, inherited from mmpretrain's own config
# (mmpretrain/.mim/configs/mocov2/mocov2_resnet50_8xb32-coslr-200e_in1k.py) and run in mmssl's scope.
# Data: data/imagenet/train/<class>/*.JPEG (labels unused).
#   bash tools/dist_train.sh configs/mocov2/mocov2_resnet50_8xb32-coslr-200e_in1k.py 8
_base_ = 'mmpretrain::mocov2/mocov2_resnet50_8xb32-coslr-200e_in1k.py'

default_scope = 'mmssl'
