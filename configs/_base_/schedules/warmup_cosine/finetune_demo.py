# A linear warm-up (LinearLR), then cosine; lengths are run fractions
# (docs/en/config.md), so train_cfg.max_epochs=N alone moves them.
# The finetune_demo recipe (finetune_vit-tiny-p4_1xb64-10e_demo.py).
param_scheduler = [
    dict(
        type='LinearLR',
        start_factor=0.001,
        by_epoch=True,
        begin=0,
        end='10%',
        convert_to_iter_based=True,
    ),
    dict(
        type='CosineAnnealingLR',
        by_epoch=True,
        eta_min=1e-06,
        begin='10%',
        end='100%',
        convert_to_iter_based=True,
    ),
]
