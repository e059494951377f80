# DINOv3 stage 1 of 3 with a ViT-B/16 on 4 GPUs x 32 (total batch 128),
# for 100k-1M images: the ViT-S/16 recipe (dinov3_vit-s16_1xb64-100e_custom)
# with a wider backbone (the heads follow it: in_channels='auto') and
# lr 0.004 * sqrt(128 / 1024) (sqrt rule). Other GPU counts: change
# train_dataloader.batch_size and add --auto-scale-lr (sqrt of the total
# batch / 128); for 10k-100k images keep 100 epochs, for more shorten with
# --max-epochs (every schedule is a fraction of the run).
#   bash tools/dist_train.sh configs/dinov3/dinov3_vit-b16_4xb32-100e_custom.py 4 \
#       --cfg-options train_dataloader.dataset.data_root=/data/my_images
_base_ = './dinov3_vit-s16_1xb64-100e_custom.py'
train_dataloader = dict(batch_size=32)
model = dict(backbone=dict(arch='base', drop_path_rate=0.15))
optim_wrapper = dict(optimizer=dict(lr=0.004 * (128 / 1024) ** 0.5))
auto_scale_lr = dict(base_batch_size=128, rule='sqrt')
env_cfg = dict(dist_cfg=dict(backend='nccl'))
