# The lr and weight-decay schedules of the DINO / iBOT / DINOv2 / DINOv3
# configs: lr warm-up then cosine to 1e-6; weight decay cosine from the
# optimizer's value to 10x it. The recipes warm up from 0 as DINO / DINOv2
# do (LinearWarmupLR: np.linspace(0, lr, W)); the CPU demos from 1e-3 x lr
# (mmengine's LinearLR). Every length is a fraction of the
# run, resolved when the runner is built (docs/en/config.md). One private
# key, ``_dino_family_schedules`` (name -> param_scheduler); a config lists
# this file among its bases and pops the key (mmengine takes a key from one
# base only):
#   param_scheduler = _base_.pop('_dino_family_schedules')['imagenet']
# Names starting with two underscores stay inside this file (mmengine).


def __lr_wd(start_factor, warmup, warmup_type='LinearWarmupLR'):
    return [
        dict(
            type=warmup_type,
            start_factor=start_factor,
            by_epoch=True,
            begin=0,
            end=warmup,
            convert_to_iter_based=True,
        ),
        dict(
            type='CosineAnnealingLR',
            eta_min=1e-6,
            by_epoch=True,
            begin=warmup,
            end='100%',
            convert_to_iter_based=True,
        ),
        dict(
            type='CosineAnnealingParamScheduler',
            param_name='weight_decay',
            eta_min_ratio=10.0,
            by_epoch=True,
            begin=0,
            end='100%',
            convert_to_iter_based=True,
        ),
    ]


_dino_family_schedules = dict(
    # ImageNet recipes (10 of 100 epochs) and the DINOv2 warm start
    imagenet=__lr_wd(0.0, '10%'),
    # small-data presets: the recipe's 10 warm-up epochs of 200
    small_data=__lr_wd(0.0, '5%'),
    # CPU demos: a gentler warm-up start for their few hundred iterations
    demo=__lr_wd(1e-3, '10%', 'LinearLR'),
)
