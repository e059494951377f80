# The optimizer of the DINOv2 / DINOv3 ViT configs (Oquab et al. 2023):
# AdamW (betas 0.9/0.999, weight decay 0.04, scheduled by the config),
# gradient clip 3.0 per student module (backbone, heads) as dinov2's
# training loop, layer-wise lr decay 0.9, patch embedding at 0.2 x lr,
# weight decay by dinov2's rule (none on biases, norms, LayerScale; the
# tokens, the mask token included, decay).
# Each config sets its lr: `optim_wrapper = dict(optimizer=dict(lr=...))`.
optim_wrapper = dict(
    # Skips steps whose loss is NaN/inf on any rank, stops after 10 in a
    # row. For fp16: --cfg-options optim_wrapper.type=NaNGuardAmpOptimWrapper
    type='NaNGuardOptimWrapper',
    max_consecutive_skips=10,
    optimizer=dict(type='AdamW', betas=(0.9, 0.999), weight_decay=0.04),
    clip_grad=dict(max_norm=3.0, scope='module'),
    constructor='LayerDecayOptimWrapperConstructor',
    paramwise_cfg=dict(
        layer_decay_rate=0.9,
        decay_rule='dinov2',
        custom_keys={'patch_embed': dict(lr_mult=0.2)},
    ),
)
