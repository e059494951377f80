# DINOv3 stage 2 of 3 (Gram anchoring) for the ViT-B/16 preset, chained
# from its stage 1 by model.warm_start (see the ViT-S/16 file for details).
#   bash tools/dist_train.sh configs/dinov3/dinov3_vit-b16_4xb32-100e_gram_custom.py 4 \
#       --cfg-options train_dataloader.dataset.data_root=/data/my_images
_base_ = './dinov3_vit-s16_1xb64-100e_gram_custom.py'
_stage1 = 'work_dirs/dinov3_vit-b16_4xb32-100e_custom/epoch_100.pth'
train_dataloader = dict(batch_size=32)
model = dict(
    backbone=dict(arch='base', drop_path_rate=0.15),
    warm_start=dict(checkpoint=_stage1),
)
optim_wrapper = dict(optimizer=dict(lr=0.004 * (128 / 1024) ** 0.5))
auto_scale_lr = dict(base_batch_size=128, rule='sqrt')
env_cfg = dict(dist_cfg=dict(backend='nccl'))
