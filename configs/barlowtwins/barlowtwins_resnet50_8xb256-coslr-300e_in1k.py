# The published ImageNet-1k recipe, inherited from mmpretrain's own config
# (mmpretrain/.mim/configs/barlowtwins/barlowtwins_resnet50_8xb256-coslr-300e_in1k.py) and run in mmssl's scope.
# Data: data/imagenet/train/<class>/*.JPEG (labels unused).
#   bash tools/dist_train.sh configs/barlowtwins/barlowtwins_resnet50_8xb256-coslr-300e_in1k.py 8
_base_ = (
    'mmpretrain::barlowtwins/barlowtwins_resnet50_8xb256-coslr-300e_in1k.py'
)

default_scope = 'mmssl'
