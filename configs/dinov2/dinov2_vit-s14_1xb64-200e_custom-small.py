# Small-data preset: DINOv2 ViT-S/14 on one GPU, batch 64, for a few
# thousand to tens of thousands of images. Smaller head (16384 prototypes),
# 200 epochs, shorter warmups, lr by the sqrt rule from 0.004 @ 1024.
#   python tools/train.py configs/dinov2/dinov2_vit-s14_1xb64-200e_custom-small.py \
#       --cfg-options train_dataloader.dataset.data_root=/data/cells
_base_ = './dinov2_vit-s14_8xb128-100e_in1k.py'
n_prototypes = 16384
max_epochs = 200
warmup_epochs = 10
train_dataloader = dict(batch_size=64, dataset=dict(data_root='data/custom'))
model = dict(
    head=dict(n_prototypes=n_prototypes),
    loss=dict(out_dim=n_prototypes),
    ibot_loss=dict(out_dim=n_prototypes),
)
optim_wrapper = dict(optimizer=dict(lr=0.004 * (64 / 1024) ** 0.5))
param_scheduler = [
    dict(
        type='LinearLR',
        start_factor=1e-6,
        by_epoch=True,
        begin=0,
        end=warmup_epochs,
        convert_to_iter_based=True,
    ),
    dict(
        type='CosineAnnealingLR',
        T_max=max_epochs - warmup_epochs,
        eta_min=1e-6,
        by_epoch=True,
        begin=warmup_epochs,
        end=max_epochs,
        convert_to_iter_based=True,
    ),
    dict(
        type='CosineAnnealingParamScheduler',
        param_name='weight_decay',
        eta_min_ratio=10.0,
        T_max=max_epochs,
        by_epoch=True,
        begin=0,
        end=max_epochs,
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
        warmup_epochs=30,
        by_epoch=False,
    ),
    dict(type='FreezeLastLayerHook', freeze_epochs=1),
]
train_cfg = dict(max_epochs=max_epochs)
auto_scale_lr = dict(base_batch_size=64, rule='sqrt')
