# DINOv2 ViT-B/14 on a custom folder with 4 GPUs x 32 (total batch 128);
# lr = 0.004 * sqrt(128 / 1024) ~= 0.0014 (sqrt rule, already applied).
# Continued pretraining from official DINOv2 weights: convert them with
# tools/model_converters/dinov2_to_mmssl.py, then add
#   --cfg-options model.backbone.init_cfg.type=Pretrained \
#       model.backbone.init_cfg.checkpoint=checkpoints/dinov2_vitb14_mmssl.pth \
#       model.backbone.init_cfg.prefix=backbone.
# (student and teacher both start from it; the heads start fresh).
# the ImageNet recipe's hooks, RankMe included (no validation on one's
# own folder), come with it
_base_ = './dinov2_vit-b14_8xb128-100e_in1k.py'
train_dataloader = dict(batch_size=32, dataset=dict(data_root='data/custom'))
optim_wrapper = dict(optimizer=dict(lr=0.004 * (128 / 1024) ** 0.5))
model = dict(backbone=dict(init_cfg=None))
auto_scale_lr = dict(base_batch_size=128, rule='sqrt')
