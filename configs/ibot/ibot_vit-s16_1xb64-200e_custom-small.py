# Small-data preset: iBOT ViT-S/16 on one GPU, batch 64, for a few thousand
# to tens of thousands of images: iBOT's model, masks and 8192-prototype
# shared head with the DINO small-data schedule
# (configs/dino/dino_vit-s16_1xb64-200e_custom-small.py: 200 epochs, lr
# 0.0005 x 64 / 256, teacher momentum 0.9995 -> 1).
#   python tools/train.py configs/ibot/ibot_vit-s16_1xb64-200e_custom-small.py \
#       --cfg-options train_dataloader.dataset.data_root=/data/my_images
_base_ = './ibot_vit-s16_8xb128-100e_in1k.py'
max_epochs = 200
warmup_epochs = 10
train_dataloader = dict(batch_size=64, dataset=dict(data_root='data/custom'))
optim_wrapper = dict(optimizer=dict(lr=0.0005 * 64 / 256))
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
    dict(type='TeacherEMAHook', momentum=0.9995, end_momentum=1.0),
    dict(
        type='TeacherTempWarmupHook',
        warmup_temp=0.04,
        temp=0.07,
        warmup_epochs=30,
        by_epoch=True,
    ),
    dict(type='FreezeLastLayerHook', freeze_epochs=1),
]
train_cfg = dict(max_epochs=max_epochs)
auto_scale_lr = dict(base_batch_size=64, rule='linear')
