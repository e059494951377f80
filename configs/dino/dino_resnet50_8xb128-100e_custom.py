# DINO ResNet-50 on any folder(s) of images:
#   bash tools/dist_train.sh configs/dino/dino_resnet50_8xb128-100e_custom.py 8 \
#       --cfg-options train_dataloader.dataset.data_root=/data/my_images
_base_ = './dino_resnet50_8xb128-100e_in1k.py'
train_dataloader = dict(dataset=dict(data_root='data/custom'))
