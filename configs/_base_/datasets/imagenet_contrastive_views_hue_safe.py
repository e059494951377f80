# The ImageNet training pipelines of mmpretrain's contrastive recipes, with
# ColorJitter as HueSafeColorJitter: mmcv 2.2 shifts the hue with
# np.uint8(negative), an OverflowError under numpy >= 2 at the first image.
# Arguments, order and random draws are otherwise mmpretrain's.
# One private key, ``_hue_safe_pipelines`` (recipe -> pipeline); an in1k
# config lists this file next to the mmpretrain config and pops the key:
#   _base_ = ['mmpretrain::byol/...', '../_base_/datasets/<this file>']
#   train_pipeline = _base_.pop('_hue_safe_pipelines')['byol']
# so the resolved config is mmpretrain's with only the jitter renamed.
# Names starting with two underscores stay inside this file (mmengine).


def __jitter(brightness, contrast, saturation, hue):
    colour = dict(
        type='HueSafeColorJitter',
        brightness=brightness,
        contrast=contrast,
        saturation=saturation,
        hue=hue,
    )
    return dict(type='RandomApply', transforms=[colour], prob=0.8)


def __crop(scale=224, **kwargs):
    return dict(
        type='RandomResizedCrop', scale=scale, backend='pillow', **kwargs
    )


def __blur(prob):
    return dict(
        type='GaussianBlur',
        magnitude_range=(0.1, 2.0),
        magnitude_std='inf',
        prob=prob,
    )


def __pipeline(num_views, *views):
    return [
        dict(type='LoadImageFromFile'),
        dict(type='MultiView', num_views=num_views, transforms=list(views)),
        dict(type='PackInputs'),
    ]


__gray = dict(
    type='RandomGrayscale',
    prob=0.2,
    keep_channels=True,
    channel_weights=(0.114, 0.587, 0.2989),
)
__flip = dict(type='RandomFlip', prob=0.5)
__strong = __jitter(0.8, 0.8, 0.8, 0.2)  # SimCLR, SwAV
__mocov2 = [__crop(crop_ratio_range=(0.2, 1.0)), __jitter(0.4, 0.4, 0.4, 0.1)]
__byol = [
    __crop(interpolation='bicubic'),
    __flip,
    __jitter(0.4, 0.4, 0.2, 0.1),
    __gray,
]


def __mocov3(min_area):
    head = [
        __crop(crop_ratio_range=(min_area, 1.0)),
        __jitter(0.4, 0.4, 0.2, 0.1),
        __gray,
    ]
    return __pipeline(
        [1, 1],
        head + [__blur(1.0), dict(type='Solarize', thr=128, prob=0.0), __flip],
        head + [__blur(0.1), dict(type='Solarize', thr=128, prob=0.2), __flip],
    )


_hue_safe_pipelines = dict(
    simclr=__pipeline(2, [__crop(), __flip, __strong, __gray, __blur(0.5)]),
    # MoCo v2, SimSiam and DenseCL
    mocov2=__pipeline(2, __mocov2 + [__gray, __blur(0.5), __flip]),
    # BYOL and Barlow Twins
    byol=__pipeline(
        [1, 1],
        __byol + [__blur(1.0), dict(type='Solarize', thr=128, prob=0.0)],
        __byol + [__blur(0.1), dict(type='Solarize', thr=128, prob=0.2)],
    ),
    mocov3_resnet=__mocov3(0.2),
    mocov3_vit=__mocov3(0.08),
    swav=__pipeline(
        [2, 6],
        [
            __crop(crop_ratio_range=(0.14, 1.0)),
            __strong,
            __gray,
            __blur(0.5),
            __flip,
        ],
        [
            __crop(96, crop_ratio_range=(0.05, 0.14)),
            __strong,
            __gray,
            __blur(0.5),
            __flip,
        ],
    ),
)
