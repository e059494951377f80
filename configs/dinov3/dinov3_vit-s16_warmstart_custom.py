# Continued pretraining: DINOv3 ViT-S/16 from the released weights, on any
# folder(s) of images, one GPU, batch 64. Student and teacher start from
# the official backbone (DINOv3 hub .pth or HF DINOv3ViTModel safetensors:
# the format is detected); the DINO/iBOT heads start fresh and are trained
# alone for the first 1000 iterations, then the whole backbone joins with
# its update ramped up over 1000 iterations. The run stops if fewer than
# 95% of the backbone tensors load. Then, optionally, stages 2 and 3 with
# model.warm_start.checkpoint pointing at this run. See
# docs/en/warm_start.md.
#   python tools/train.py configs/dinov3/dinov3_vit-s16_warmstart_custom.py \
#       --cfg-options train_dataloader.dataset.data_root=/data/cells \
#       model.warm_start.checkpoint=checkpoints/dinov3_vits16_pretrain_lvd1689m-08c60483.pth
_base_ = [
    './dinov3_vit-s16_1xb64-100e_custom.py',
    '../_base_/schedules/teacher_student_hooks.py',
]
model = dict(
    warm_start=dict(
        checkpoint='checkpoints/dinov3_vits16_pretrain_lvd1689m-08c60483.pth',
        format='auto',  # dinov3 | hf_dinov3 | mmssl | ...
        min_match=0.95,
        head_iters=1000,  # heads alone first (backbone frozen)
        unfreeze='all',  # or K: only the last K blocks (+ final norm)
        ramp_iters=1000,  # backbone updates ramped 0 -> 1
    ),
)
# a tenth of the from-scratch lr: the backbone is already good
optim_wrapper = dict(optimizer=dict(lr=0.1 * 0.004 * (64 / 1024) ** 0.5))
train_cfg = dict(max_epochs=50)
custom_hooks = _base_.pop('_teacher_student_hooks')['dinov3_warm_start']  # noqa: F821
