# The lr schedules of the form "linear warm-up (LinearLR), then cosine"
# (and the warm-up-only ones of DINOv3), for every config that uses one.
# Lengths are fractions of the run, resolved when the runner is built
# (docs/en/config.md), so train_cfg.max_epochs=N alone moves them; for the
# mmpretrain ImageNet-1k recipes they are the published numbers at the
# published epochs. A recipe whose configs have no other base that sets
# param_scheduler is a file of its own under warmup_cosine/ (listed among
# the bases, nothing popped). The rest are here, under one private key,
# ``_warmup_cosine`` (name -> param_scheduler), for configs whose other
# bases set the key (an mmpretrain:: recipe; mmengine takes a key from one
# base only): such a config lists this file among its bases and pops it:
#   _base_ = ['mmpretrain::mae/...', '../_base_/schedules/<this file>']
#   param_scheduler = _base_.pop('_warmup_cosine')['mae']
# Names starting with two underscores stay inside this file (mmengine).


def __warmup(start_factor, warmup):
    return dict(
        type='LinearLR',
        start_factor=start_factor,
        by_epoch=True,
        begin=0,
        end=warmup,
        convert_to_iter_based=True,
    )


def __warmup_cosine(
    start_factor, warmup, eta_min=None, iter_cosine=True, end='100%'
):
    cosine = dict(type='CosineAnnealingLR', by_epoch=True)
    if eta_min is not None:
        cosine['eta_min'] = eta_min
    cosine.update(begin=warmup, end=end)
    if iter_cosine:
        cosine['convert_to_iter_based'] = True
    return [__warmup(start_factor, warmup), cosine]


_warmup_cosine = dict(
    # mmpretrain's ImageNet-1k recipes
    # BEiT, BEiT v2, CAE, iTPN-CLIP: 10 of 300 epochs
    beit=__warmup_cosine(0.0001, '1/30', eta_min=1e-05),
    # Barlow Twins: 10 of 300 epochs
    barlowtwins=__warmup_cosine(0.00016, '1/30', eta_min=0.0016),
    # MAE, MFF, MixMIM, MoCo v3 ViT: 40 of 300 epochs
    mae=__warmup_cosine(0.0001, '2/15'),
    # EVA, MILAN, iTPN-pixel: 40 of 400 epochs; MoCo v3 ResNet: 10 of 100
    eva=__warmup_cosine(0.0001, '10%'),
    # MaskFeat: 30 of 300 epochs
    maskfeat=__warmup_cosine(1e-06, '10%', eta_min=1e-06),
    # SimMIM Swin-B: 10 of 100 epochs
    simmim=__warmup_cosine(0.004999999999999999, '10%', eta_min=4e-05),
    # BYOL, SimCLR: 10 of 200 epochs, cosine stepped by epoch
    byol=__warmup_cosine(0.0001, '5%', iter_cosine=False),
    # SparK: 40 of 800 epochs; weight decay cosine down to 0.2
    spark=__warmup_cosine(0.0001, '5%')
    + [
        dict(
            type='CosineAnnealingWeightDecay',
            eta_min=0.2,
            by_epoch=True,
            begin=0,
            end='100%',
            convert_to_iter_based=True,
        )
    ],
    # mmssl's own recipes
    # DINO ResNet-50 (lr cosine to 0.0048)
    dino_resnet50=__warmup_cosine(1e-6, '10%', eta_min=0.0048, end='100%'),
    # DINOv3: linear warm-up, then constant lr
    dinov3=[__warmup(1e-6, '10%')],
    dinov3_small_data=[__warmup(1e-6, '5%')],
    # the CPU demos (a gentler warm-up start for their few iterations)
    dino_cnn_demo=__warmup_cosine(0.01, '25%', end='100%'),
    simclr_demo=__warmup_cosine(0.1, '10%', end='100%'),
    dinov3_demo=[__warmup(1e-3, '10%')],
)
