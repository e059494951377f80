# Small-data preset: DINOv2 ViT-S/14 on one GPU, batch 64, for 5k to 50k
# images. What differs from dinov2_vit-s14_8xb128-100e_in1k.py, and why
# (measured at demo scale in README.md, "Small-data preset: why these
# values"; tests/test_configs/test_small_data_presets.py keeps it so):
# - batch 64 on one GPU; lr by DINOv2's square-root rule from its
#   reference batch, 0.004 x sqrt(64 / 1024) = 0.001 (auto_scale_lr: base
#   64, sqrt).
# - 200 epochs: 5k-50k images at batch 64 are only 78-780 iterations an
#   epoch (ImageNet at 1024: 1251).
# - warm-ups kept at the recipe's length in epochs, so shorter fractions
#   of the run: lr 10 epochs (5%), teacher temperature 0.04 -> 0.07 over 30
#   epochs (15%), last layer frozen 1 epoch (0.5%).
# - 16384 prototypes (CLS and iBOT losses) instead of 65536, for memory,
#   not for the data size (at demo scale a 16x larger head was better with
#   both seeds): fp32 at batch 64 already takes 22.3 GB on one GPU
#   (docs/dev/benchmarks_history.md); 65536 adds ~0.25 GB of weights and AdamW
#   state, ~0.13 GB per copy of the CLS logits and ~1 GB per copy of the
#   iBOT patch logits (arithmetic). With memory to spare (or --amp):
#   model.head.n_prototypes=65536 model.loss.out_dim=65536
#   model.ibot_loss.out_dim=65536.
# Unchanged: KoLeo weight 0.1 (the term that makes the demo learn),
# teacher momentum 0.992 -> 1, crops (2 x 224 at 0.32-1, 8 x 96 at
# 0.05-0.32), iBOT masks, drop path 0.1, layer decay 0.9, patch-embed
# lr x0.2, weight decay 0.04 -> 0.4.
#   python tools/train.py configs/dinov2/dinov2_vit-s14_1xb64-200e_custom-small.py \
#       --cfg-options train_dataloader.dataset.data_root=/data/cells
_base_ = [
    './dinov2_vit-s14_8xb128-100e_in1k.py',
    '../_base_/schedules/small_data_200e.py',
    '../_base_/schedules/teacher_student_hooks.py',
]
model = dict(
    head=dict(n_prototypes=16384),
    loss=dict(out_dim=16384),
    ibot_loss=dict(out_dim=16384),
)
optim_wrapper = dict(optimizer=dict(lr=0.004 * (64 / 1024) ** 0.5))
# the small-data schedule (configs/_base_/schedules/small_data_200e.py)
__small = _base_.pop('_small_data_200e')  # noqa: F821
train_dataloader = __small['train_dataloader']
param_scheduler = __small['param_scheduler']
# DINOv2's momentum and per-iteration temperature warm-up
custom_hooks = _base_.pop('_teacher_student_hooks')['dinov2_small_data']  # noqa: F821
train_cfg = __small['train_cfg']
default_hooks = __small['default_hooks']
auto_scale_lr = dict(base_batch_size=64, rule='sqrt')
