# The optimizer of the DINO ViT configs (Caron et al. 2021): AdamW (betas
# 0.9/0.999, weight decay 0.04, scheduled by the config), gradient clip
# 3.0 on each parameter tensor (DINO's utils.clip_gradients), no decay on
# biases / norms. Steps whose loss is NaN/inf on any rank
# are skipped, 10 in a row stop the run. Each config sets its lr:
# `optim_wrapper = dict(optimizer=dict(lr=...))`.
optim_wrapper = dict(
    type='NaNGuardOptimWrapper',
    max_consecutive_skips=10,
    optimizer=dict(type='AdamW', betas=(0.9, 0.999), weight_decay=0.04),
    clip_grad=dict(max_norm=3.0, scope='tensor'),
    paramwise_cfg=dict(flat_decay_mult=0.0),
)
