# DINOv3 stage 3 of 3 (high-resolution adaptation, mixed crop sizes) for
# the ViT-B/16 preset, chained from its stage 2 by model.warm_start; 4 GPUs
# x 16 (total batch 64) because of the 512-pixel crops.
#   bash tools/dist_train.sh configs/dinov3/dinov3_vit-b16_4xb32-100e_highres_custom.py 4 \
#       --cfg-options train_dataloader.dataset.dataset.data_root=/data/my_images
_base_ = './dinov3_vit-s16_1xb64-100e_highres_custom.py'
_stage2 = 'work_dirs/dinov3_vit-b16_4xb32-100e_gram_custom/epoch_30.pth'
train_dataloader = dict(batch_size=16)
model = dict(
    backbone=dict(arch='base', drop_path_rate=0.15),
    warm_start=dict(checkpoint=_stage2),
)
optim_wrapper = dict(optimizer=dict(lr=0.004 * (64 / 1024) ** 0.5))
auto_scale_lr = dict(base_batch_size=64, rule='sqrt')
env_cfg = dict(dist_cfg=dict(backend='nccl'))
