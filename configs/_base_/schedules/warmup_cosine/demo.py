# A linear warm-up (LinearLR), then cosine; lengths are run fractions
# (docs/en/config.md), so train_cfg.max_epochs=N alone moves them.
# The demo recipe (demo_4e.py).
# the CPU demos (a gentler warm-up start for their few iterations)
param_scheduler = [
    dict(
        type='LinearLR',
        start_factor=0.1,
        by_epoch=True,
        begin=0,
        end='25%',
        convert_to_iter_based=True,
    ),
    dict(
        type='CosineAnnealingLR',
        by_epoch=True,
        begin='25%',
        end='100%',
        convert_to_iter_based=True,
    ),
]
