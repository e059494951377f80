# The lr schedules of mmpretrain's ImageNet-1k recipes (linear warm-up, then
# cosine), written as fractions of the run: begin/end are resolved when the
# runner is built (docs/en/config.md), so train_cfg.max_epochs=N alone moves
# them, and at each recipe's published epochs they are the published
# numbers. One private key, ``_in1k_warmup_cosine`` (recipe ->
# param_scheduler); an in1k config lists this file next to the mmpretrain
# config and pops the key (mmengine takes a key from one base only):
#   _base_ = ['mmpretrain::mae/...', '../_base_/schedules/<this file>']
#   param_scheduler = _base_.pop('_in1k_warmup_cosine')['mae']
# Names starting with two underscores stay inside this file (mmengine).


def __warmup_cosine(start_factor, warmup, eta_min=None, iter_cosine=True):
    cosine = dict(type='CosineAnnealingLR', by_epoch=True)
    if eta_min is not None:
        cosine['eta_min'] = eta_min
    cosine.update(begin=warmup, end='100.0%')
    if iter_cosine:
        cosine['convert_to_iter_based'] = True
    warmup = dict(
        type='LinearLR',
        start_factor=start_factor,
        by_epoch=True,
        begin=0,
        end=warmup,
        convert_to_iter_based=True,
    )
    return [warmup, cosine]


_in1k_warmup_cosine = dict(
    # BEiT, BEiT v2, CAE, iTPN-CLIP: 10 of 300 epochs
    beit=__warmup_cosine(0.0001, '3.3333333333333335%', eta_min=1e-05),
    # Barlow Twins: 10 of 300 epochs
    barlowtwins=__warmup_cosine(
        0.00016, '3.3333333333333335%', eta_min=0.0016
    ),
    # MAE, MFF, MixMIM, MoCo v3 ViT: 40 of 300 epochs
    mae=__warmup_cosine(0.0001, '13.333333333333334%'),
    # EVA, MILAN, iTPN-pixel: 40 of 400 epochs; MoCo v3 ResNet: 10 of 100
    eva=__warmup_cosine(0.0001, '10.0%'),
    # MaskFeat: 30 of 300 epochs
    maskfeat=__warmup_cosine(1e-06, '10.0%', eta_min=1e-06),
    # SimMIM Swin-B: 10 of 100 epochs
    simmim=__warmup_cosine(0.004999999999999999, '10.0%', eta_min=4e-05),
    # BYOL, SimCLR: 10 of 200 epochs, cosine stepped by epoch
    byol=__warmup_cosine(0.0001, '5.0%', iter_cosine=False),
)
