# Continued pretraining: DINOv2 ViT-S/14 from the released weights, on any
# folder(s) of images, one GPU, batch 64. Student and teacher start from
# the official backbone (DINOv2 hub .pth, timm, or HF safetensors: the
# format is detected); the DINO/iBOT heads start fresh and are trained
# alone for the first 1000 iterations, then the whole backbone joins with
# its update ramped up over 1000 iterations. The run stops if fewer than
# 95% of the backbone tensors load. See docs/en/warm_start.md.
#   python tools/train.py configs/dinov2/dinov2_vit-s14_warmstart_custom.py \
#       --cfg-options train_dataloader.dataset.data_root=/data/cells \
#       model.warm_start.checkpoint=checkpoints/dinov2_vits14_pretrain.pth
# Multi-channel images (e.g. 5-channel microscopy): set
# model.backbone.in_channels=5 (new channels start from the RGB mean) and a
# loading pipeline / data preprocessor with 5 channels.
_base_ = [
    './dinov2_vit-s14_1xb64-200e_custom-small.py',
    '../_base_/schedules/dino_family_lr_wd.py',
    '../_base_/schedules/teacher_student_hooks.py',
]
model = dict(
    warm_start=dict(
        checkpoint='checkpoints/dinov2_vits14_pretrain.pth',
        format='auto',  # dinov2 | timm | hf_dinov2 | mmssl | ...
        min_match=0.95,
        head_iters=1000,  # heads alone first (backbone frozen)
        unfreeze='all',  # or K: only the last K blocks (+ final norm)
        ramp_iters=1000,  # backbone updates ramped 0 -> 1
    ),
)
# a tenth of the from-scratch lr: the backbone is already good
optim_wrapper = dict(optimizer=dict(lr=0.1 * 0.004 * (64 / 1024) ** 0.5))
# 50 epochs; lr and temperature warm-ups of 10% of the run (5 epochs),
# the last layer frozen for the first 2%. train_cfg.max_epochs=N alone
# (or --max-epochs N) moves every schedule below.
param_scheduler = _base_.pop('_dino_family_schedules')['imagenet']  # noqa: F821
custom_hooks = _base_.pop('_teacher_student_hooks')['dinov2_warm_start']  # noqa: F821
train_cfg = dict(max_epochs=50)
