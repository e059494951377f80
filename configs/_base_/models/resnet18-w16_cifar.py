# The demos' ResNet: CIFAR-style (3x3 stem, no max-pool) for 32 px images,
# depth 18, width 16. An algorithm config adds its model type, neck and
# head (`model = dict(type=..., neck=..., head=...)`).
_backbone = dict(
    type='ResNet_CIFAR',
    depth=18,
    stem_channels=16,
    base_channels=16,
    zero_init_residual=True,
)
model = dict(backbone=_backbone)
