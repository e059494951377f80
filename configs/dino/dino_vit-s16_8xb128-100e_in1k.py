# DINO (Caron et al. 2021, https://arxiv.org/abs/2104.14294) ViT-S/16 on
# ImageNet-1k train images (labels unused), 100 epochs, total batch 1024
# (8 GPUs x 128; the paper used 16 x 64). DINO defaults: 2x224 global
# (scale 0.4-1) + 10x96 local (0.05-0.4) crops, 65536 prototypes,
# norm_last_layer=False (ViT-S), centring (momentum 0.9), student temp 0.1,
# teacher temp 0.04 -> 0.07 over 30 epochs (per epoch), teacher momentum
# 0.996 -> 1, lr 0.0005 x batch / 256 (linear; = 0.002 at 1024) with 10
# warmup epochs, weight decay 0.04 -> 0.4, clip 3.0, last layer frozen for
# the first epoch, drop path 0.1. Reference: 69.3 kNN / 74.0 linear top-1.
_base_ = [
    '../_base_/datasets/custom_folder_multicrop.py',
    '../_base_/models/dino_vit-s16.py',
    '../_base_/schedules/dino_family_100e.py',
    '../_base_/schedules/teacher_student_hooks.py',
    '../_base_/datasets/multicrop_224px.py',
    '../_base_/schedules/dino_adamw.py',
]
train_pipeline = _base_.pop('_multicrop_224px')['dino']  # noqa: F821
train_dataloader = dict(
    batch_size=128,
    dataset=dict(data_root='data/imagenet/train', pipeline=train_pipeline),
)


optim_wrapper = dict(optimizer=dict(lr=0.0005 * 1024 / 256))
custom_hooks = _base_.pop('_teacher_student_hooks')['dino_vit']  # noqa: F821
# lr 0.002 is for a total batch of 1024: --auto-scale-lr (linear) rescales.
auto_scale_lr = dict(base_batch_size=1024, rule='linear')
