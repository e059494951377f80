# Small-data preset: DINOv3 stage 1 (DINO CLS + iBOT + KoLeo 0.1, RoPE
# ViT-S/16 with 4 registers) on one GPU, batch 64, for 5k to 50k images.
# Everything is dinov3_vit-s16_1xb64-100e_custom.py except the run length:
# 200 epochs (5k images at batch 64 are only 78 iterations an epoch), with
# the warm-ups kept at the same number of epochs, so shorter fractions of
# the run: lr 10 epochs ('5%'), teacher temperature 30 epochs ('15%'),
# last layer frozen 1 epoch ('0.5%'). lr by DINOv2/v3's square-root rule,
# 0.004 x sqrt(64 / 1024) = 0.001; --auto-scale-lr rescales it (sqrt) for
# another batch. Why these values, measured at demo scale: README.md,
# "Small-data preset: why these values".
#   python tools/train.py configs/dinov3/dinov3_vit-s16_1xb64-200e_custom-small.py \
#       --cfg-options train_dataloader.dataset.data_root=/data/my_images
# Stage 2 (Gram anchoring) then starts from this run's last checkpoint:
#   python tools/train.py configs/dinov3/dinov3_vit-s16_1xb64-100e_gram_custom.py \
#       --cfg-options train_dataloader.dataset.data_root=/data/my_images \
#       model.warm_start.checkpoint=work_dirs/dinov3_vit-s16_1xb64-200e_custom-small/epoch_200.pth
_base_ = [
    './dinov3_vit-s16_1xb64-100e_custom.py',
    '../_base_/schedules/warmup_cosine.py',
    '../_base_/schedules/teacher_student_hooks.py',
]

# DINOv3: linear lr warm-up (10 epochs), then constant lr and weight decay
param_scheduler = _base_.pop('_warmup_cosine')['dinov3_small_data']  # noqa: F821
custom_hooks = _base_.pop('_teacher_student_hooks')['dinov3_small_data']  # noqa: F821
train_cfg = dict(max_epochs=200)
default_hooks = dict(checkpoint=dict(interval='2.5%'))
