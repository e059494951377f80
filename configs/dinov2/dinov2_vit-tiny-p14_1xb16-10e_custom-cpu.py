# CPU preset: DINOv2 ViT-tiny/14 on a folder of your own images, sized for
# one CPU (or a small GPU) with 4 GB of memory, for a first run of a few
# hundred to a few thousand images. What differs from the small-data
# preset (dinov2_vit-s14_1xb64-200e_custom-small.py), and why:
# - ViT-tiny (192 wide, 12 blocks, 3 heads, 5.5M parameters) instead of
#   ViT-S: about a quarter of the compute per token.
# - crops 2 x 112 (8x8 patches) + 4 x 56 (4x4) instead of 2 x 224 +
#   8 x 96: about 8x fewer tokens per image.
# - batch 16; lr by DINOv2's square-root rule, 0.004 x sqrt(16 / 1024) =
#   0.0005 (auto_scale_lr: base 16, sqrt).
# - 4096 prototypes and a 1024-wide head: the CPU's memory and time go to
#   the backbone, not to a 16384-way head.
# - 10 epochs (120 iterations on 200 images); checkpoints at 50% and at
#   the end (one kept).
# - 2 dataloader workers (fewer when the machine has fewer cores).
# Unchanged: the DINOv2 losses (DINO CLS, iBOT patches, KoLeo 0.1),
# Sinkhorn-Knopp centering, teacher momentum 0.992 -> 1, teacher
# temperature warm-up, iBOT masks on half of the global crops, layer decay
# 0.9, weight decay 0.04 -> 0.4, gradient clip 3.0.
# Peak memory, time per iteration and the walk-through with 200 images:
# docs/en/custom_dataset.md, "DINOv2 on a CPU in 15 minutes".
#   python tools/train.py configs/dinov2/dinov2_vit-tiny-p14_1xb16-10e_custom-cpu.py \
#       --cfg-options train_dataloader.dataset.data_root=data/my_images
_base_ = './dinov2_vit-s14_1xb64-200e_custom-small.py'

_global_size = 112
_local_size = 56
_num_local_crops = 4
_n_prototypes = 4096

train_pipeline = [
    dict(type='LoadImageRobust', max_side=512),
    dict(
        type='MultiCrop',
        num_global_crops=2,
        num_local_crops=_num_local_crops,
        global_size=_global_size,
        local_size=_local_size,
        global_scale=(0.32, 1.0),
        local_scale=(0.05, 0.32),
    ),
    dict(
        type='PackInputs',
        meta_keys=('sample_idx', 'img_path', 'num_global_crops', 'source'),
    ),
]
train_dataloader = dict(
    batch_size=16,
    num_workers=2,
    pin_memory=False,
    dataset=dict(pipeline=train_pipeline),
)
model = dict(
    backbone=dict(arch='tiny', img_size=_global_size),
    head=dict(n_prototypes=_n_prototypes, hidden_channels=1024),
    loss=dict(out_dim=_n_prototypes),
    ibot_loss=dict(out_dim=_n_prototypes),
)
optim_wrapper = dict(optimizer=dict(lr=0.004 * (16 / 1024) ** 0.5))
auto_scale_lr = dict(base_batch_size=16, rule='sqrt')
train_cfg = dict(max_epochs=10)
default_hooks = dict(
    logger=dict(interval=10),
    checkpoint=dict(interval='50%', max_keep_ckpts=1),
)
env_cfg = dict(dist_cfg=dict(backend='gloo'))
