# Small-data preset: DINOv2 ViT-S/14 on one GPU, batch 64, for a few
# thousand to tens of thousands of images. Smaller head (16384 prototypes),
# 200 epochs, shorter warmups, lr by the sqrt rule from 0.004 @ 1024.
#   python tools/train.py configs/dinov2/dinov2_vit-s14_1xb64-200e_custom-small.py \
#       --cfg-options train_dataloader.dataset.data_root=/data/cells
_base_ = './dinov2_vit-s14_8xb128-100e_in1k.py'
train_dataloader = dict(batch_size=64, dataset=dict(data_root='data/custom'))
model = dict(
    head=dict(n_prototypes=16384),
    loss=dict(out_dim=16384),
    ibot_loss=dict(out_dim=16384),
)
optim_wrapper = dict(optimizer=dict(lr=0.004 * (64 / 1024) ** 0.5))
# 200 epochs with the warm-ups of 10 (lr) and 30 (temperature) epochs and
# one frozen epoch: 5%, 15% and 0.5% of the run.
param_scheduler = [
    dict(
        type='LinearLR',
        start_factor=1e-6,
        by_epoch=True,
        begin=0,
        end='5%',
        convert_to_iter_based=True,
    ),
    dict(
        type='CosineAnnealingLR',
        eta_min=1e-6,
        by_epoch=True,
        begin='5%',
        end='100%',
        convert_to_iter_based=True,
    ),
    dict(
        type='CosineAnnealingParamScheduler',
        param_name='weight_decay',
        eta_min_ratio=10.0,
        by_epoch=True,
        begin=0,
        end='100%',
        convert_to_iter_based=True,
    ),
]
custom_hooks = [
    dict(type='BadFileSummaryHook', interval=50),
    dict(type='TeacherEMAHook', momentum=0.992, end_momentum=1.0),
    dict(
        type='TeacherTempWarmupHook',
        warmup_temp=0.04,
        temp=0.07,
        warmup_epochs='15%',
        by_epoch=False,
    ),
    dict(type='FreezeLastLayerHook', freeze_epochs='0.5%'),
]
train_cfg = dict(max_epochs=200)
default_hooks = dict(checkpoint=dict(interval='2.5%'))
auto_scale_lr = dict(base_batch_size=64, rule='sqrt')
