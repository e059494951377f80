# The fine-tuning optimiser of BEiT (Bao et al., 2022) and MAE (He et al.,
# 2022, Appendix A.1): AdamW (betas 0.9 / 0.999, weight decay 0.05) with
# layer-wise lr decay 0.75 (mmssl's LayerDecayOptimWrapperConstructor), no
# weight decay on norms, biases, the CLS token and the position embedding.
# Each config sets its lr, its wrapper type (AmpOptimWrapper on GPUs) and
# its loop; val and test use the default loops.
optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='AdamW', betas=(0.9, 0.999), weight_decay=0.05),
    constructor='LayerDecayOptimWrapperConstructor',
    paramwise_cfg=dict(
        layer_decay_rate=0.75,
        norm_decay_mult=0.0,
        bias_decay_mult=0.0,
        custom_keys={
            '.cls_token': dict(decay_mult=0.0),
            '.pos_embed': dict(decay_mult=0.0),
        },
    ),
)
val_cfg = dict()
test_cfg = dict()
