# iBOT ViT-S/16 on any folder(s) of images:
#   bash tools/dist_train.sh configs/ibot/ibot_vit-s16_8xb128-100e_custom.py 8 \
#       --cfg-options train_dataloader.dataset.data_root=/data/my_images
_base_ = './ibot_vit-s16_8xb128-100e_in1k.py'
train_dataloader = dict(dataset=dict(data_root='data/custom'))
