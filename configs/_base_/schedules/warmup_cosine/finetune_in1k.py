# A linear warm-up (LinearLR), then cosine; lengths are run fractions
# (docs/en/config.md), so train_cfg.max_epochs=N alone moves them.
# The finetune_in1k recipe (finetune_vit-small-p16_8xb128-coslr-100e_in1k.py).
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
        eta_min=1e-06,
        begin='5%',
        end='100%',
        convert_to_iter_based=True,
    ),
]
