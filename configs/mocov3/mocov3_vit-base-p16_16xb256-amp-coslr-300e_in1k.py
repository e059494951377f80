# The published ImageNet-1k recipe, inherited from mmpretrain's own config
# (mmpretrain/.mim/configs/mocov3/mocov3_vit-base-p16_16xb256-amp-coslr-300e_in1k.py) and run in mmssl's scope.
# Data: data/imagenet/train/<class>/*.JPEG (labels unused).
#   bash tools/dist_train.sh configs/mocov3/mocov3_vit-base-p16_16xb256-amp-coslr-300e_in1k.py 8
_base_ = (
    'mmpretrain::mocov3/mocov3_vit-base-p16_16xb256-amp-coslr-300e_in1k.py'
)

default_scope = 'mmssl'

# mmcv 2.2 shifts the hue with np.uint8(negative), which raises an
# OverflowError under numpy >= 2 at the first image: the inherited
# pipeline again, with the ColorJitter steps as HueSafeColorJitter
# (same arguments and random draws).
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(
        type='MultiView',
        num_views=[1, 1],
        transforms=[
            [
                dict(
                    type='RandomResizedCrop',
                    scale=224,
                    crop_ratio_range=(0.08, 1.0),
                    backend='pillow',
                ),
                dict(
                    type='RandomApply',
                    transforms=[
                        dict(
                            type='HueSafeColorJitter',
                            brightness=0.4,
                            contrast=0.4,
                            saturation=0.2,
                            hue=0.1,
                        )
                    ],
                    prob=0.8,
                ),
                dict(
                    type='RandomGrayscale',
                    prob=0.2,
                    keep_channels=True,
                    channel_weights=(0.114, 0.587, 0.2989),
                ),
                dict(
                    type='GaussianBlur',
                    magnitude_range=(0.1, 2.0),
                    magnitude_std='inf',
                    prob=1.0,
                ),
                dict(type='Solarize', thr=128, prob=0.0),
                dict(type='RandomFlip', prob=0.5),
            ],
            [
                dict(
                    type='RandomResizedCrop',
                    scale=224,
                    crop_ratio_range=(0.08, 1.0),
                    backend='pillow',
                ),
                dict(
                    type='RandomApply',
                    transforms=[
                        dict(
                            type='HueSafeColorJitter',
                            brightness=0.4,
                            contrast=0.4,
                            saturation=0.2,
                            hue=0.1,
                        )
                    ],
                    prob=0.8,
                ),
                dict(
                    type='RandomGrayscale',
                    prob=0.2,
                    keep_channels=True,
                    channel_weights=(0.114, 0.587, 0.2989),
                ),
                dict(
                    type='GaussianBlur',
                    magnitude_range=(0.1, 2.0),
                    magnitude_std='inf',
                    prob=0.1,
                ),
                dict(type='Solarize', thr=128, prob=0.2),
                dict(type='RandomFlip', prob=0.5),
            ],
        ],
    ),
    dict(type='PackInputs'),
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
