# Small-data preset: DINO ViT-S/16 on one GPU, batch 64, for 5k to 50k
# images. What differs from dino_vit-s16_8xb128-100e_in1k.py, and why
# (measured at demo scale in README.md, "Small-data preset: why these
# values"; tests/test_configs/test_small_data_presets.py keeps it so):
# - batch 64 on one GPU; lr by DINO's linear rule from its reference
#   batch, 0.0005 x 64 / 256 = 0.000125 (auto_scale_lr: base 64, linear).
# - 200 epochs: 5k-50k images at batch 64 are only 78-780 iterations an
#   epoch (ImageNet at 1024: 1251).
# - warm-ups kept at the recipe's length in epochs, so shorter fractions
#   of the run: lr 10 epochs (5%), teacher temperature 0.04 -> 0.07 over 30
#   epochs (15%), last layer frozen 1 epoch (0.5%).
# - teacher momentum 0.9995 -> 1 instead of 0.996: DINO's advice for
#   small batches (0.9995 at batch 256).
# - 16384 prototypes instead of 65536, for memory, not for the data size
#   (at demo scale a 16x larger head was not worse on average over two
#   seeds): 65536 adds ~0.25 GB of weights and AdamW state and ~0.13 GB
#   per copy of the fp32 logits (arithmetic). With memory to spare:
#   model.head.n_prototypes=65536 model.loss.out_dim=65536.
# Unchanged: crops (2 x 224 at 0.4-1, 10 x 96 at 0.05-0.4), drop path
# 0.1, weight decay 0.04 -> 0.4, no layer-wise lr decay (DINO has none).
#   python tools/train.py configs/dino/dino_vit-s16_1xb64-200e_custom-small.py \
#       --cfg-options train_dataloader.dataset.data_root=/data/my_images
_base_ = [
    './dino_vit-s16_8xb128-100e_in1k.py',
    '../_base_/schedules/small_data_200e.py',
]
model = dict(head=dict(n_prototypes=16384), loss=dict(out_dim=16384))
optim_wrapper = dict(optimizer=dict(lr=0.0005 * 64 / 256))
# the small-data schedule (configs/_base_/schedules/small_data_200e.py)
__small = _base_.pop('_small_data_200e')  # noqa: F821
train_dataloader = __small['train_dataloader']
param_scheduler = __small['param_scheduler']
custom_hooks = __small['custom_hooks']
train_cfg = __small['train_cfg']
default_hooks = __small['default_hooks']
auto_scale_lr = dict(base_batch_size=64, rule='linear')
