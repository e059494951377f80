# PixMIM (Liu et al. 2023, https://arxiv.org/abs/2303.02416) on ImageNet-1k:
# mmssl's MAE ViT-B/16 recipe (300 epochs, AdamW, AMP) with the paper's two
# changes: a low-pass-filtered reconstruction target (radius 40 cycles per
# 224 px image) and a simple resized crop (short side to 224, then a 224
# crop of the 4 px reflect-padded image) instead of the random resized crop.
# Data: data/imagenet/train/<class>/*.JPEG (labels unused).
#   bash tools/dist_train.sh configs/pixmim/pixmim_vit-base-p16_8xb512-amp-coslr-300e_in1k.py 8
_base_ = '../mae/mae_vit-base-p16_8xb512-amp-coslr-300e_in1k.py'

# _scope_: the model dict inherited from mmpretrain's config carries
# _scope_='mmpretrain', where PixMIM is not registered.
model = dict(type='PixMIM', _scope_='mmssl', low_freq_radius=40)

# the run's label-free figure (RankMe of the backbone's features, before
# training and after every epoch; docs/en/evaluation.md)
custom_hooks = [dict(type='RankMeHook')]

# simple resized crop (Sec. 3.2 of the paper), through torchvision's
# transforms as the paper's code does
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='ToPIL', to_rgb=True),
    dict(type='torchvision/Resize', size=224),
    dict(
        type='torchvision/RandomCrop',
        size=224,
        padding=4,
        padding_mode='reflect',
    ),
    dict(type='torchvision/RandomHorizontalFlip', p=0.5),
    dict(type='ToNumpy', to_bgr=True),
    dict(type='PackInputs'),
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
