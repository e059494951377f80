# A linear warm-up (LinearLR), then cosine; lengths are run fractions
# (docs/en/config.md), so train_cfg.max_epochs=N alone moves them.
# The simclr_resnet50_5ch recipe (simclr_resnet50_8xb64-coslr-200e_5ch_custom.py).
param_scheduler = [
    dict(
        type='LinearLR',
        start_factor=0.0001,
        by_epoch=True,
        begin=0,
        end='5%',
        convert_to_iter_based=True,
    ),
    dict(
        type='CosineAnnealingLR',
        by_epoch=True,
        begin='5%',
        end='100%',
        convert_to_iter_based=True,
    ),
]
