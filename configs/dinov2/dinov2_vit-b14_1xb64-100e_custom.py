# DINOv2 ViT-B/14 at batch 64 per GPU, set up for speed on one H100 / H200
# (issue 27): bf16 autocast without a loss scaler, fused AdamW (the NaN
# guard decides on the device), iBOT masks in a fixed-size buffer
# (block_mask_collate), pinned batches copied without blocking, logged
# values read at the log interval only, and
# activation checkpointing only where memory needs it. Same recipe as
# ./dinov2_vit-b14_8xb128-100e_in1k.py otherwise; lr follows DINOv2's
# sqrt rule from 0.004 at batch 1024. More GPUs: tools/dist_train.sh with
# --auto-scale-lr.
#   python tools/train.py configs/dinov2/dinov2_vit-b14_1xb64-100e_custom.py \
#       --cfg-options train_dataloader.dataset.data_root=/data/my_images
#   python tools/analysis_tools/benchmark_train.py \
#       configs/dinov2/dinov2_vit-b14_1xb64-100e_custom.py --iters 20
# the ImageNet recipe's hooks, RankMe included (no validation on one's
# own folder), come with it
_base_ = './dinov2_vit-b14_8xb128-100e_in1k.py'
train_dataloader = dict(
    batch_size=64,
    num_workers=10,
    pin_memory=True,
    persistent_workers=True,
    dataset=dict(data_root='data/custom'),
)
model = dict(
    data_preprocessor=dict(non_blocking=True),
    # activation checkpointing: fits at batch 64 in bf16 as it is
    backbone=dict(with_cp=False),
)
optim_wrapper = dict(
    type='NaNGuardAmpOptimWrapper',
    dtype='bfloat16',
    loss_scale=dict(enabled=False),  # bf16 has fp32's range
    optimizer=dict(lr=0.004 * (64 / 1024) ** 0.5),
)
auto_scale_lr = dict(base_batch_size=64, rule='sqrt')
# read the logged losses (and the NaN guard's counts) from the GPU only
# when the logger prints: no CPU-GPU sync between two log lines
default_hooks = dict(
    runtime_info=dict(type='BatchedRuntimeInfoHook', interval='logger')
)
