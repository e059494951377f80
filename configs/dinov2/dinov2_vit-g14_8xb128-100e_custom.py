# DINOv2 ViT-G/14 on any folder(s) of images (no labels, any sizes):
#   bash tools/dist_train.sh configs/dinov2/dinov2_vit-g14_8xb128-100e_custom.py 8 \
#       --cfg-options train_dataloader.dataset.data_root=/data/my_images
# A list mixes folders: "train_dataloader.dataset.data_root=['/a','/b']".
_base_ = './dinov2_vit-g14_8xb128-100e_in1k.py'
train_dataloader = dict(dataset=dict(data_root='data/custom'))
