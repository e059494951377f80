# SwAV (Caron et al. 2020, https://arxiv.org/abs/2006.09882) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a CIFAR-style ResNet-18 of width 16, 4 epochs on CPU, then a kNN
# evaluation on data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/swav/swav_resnet18-w16_1xb64-mcrop-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_two_view.py',
    '../_base_/schedules/demo_4e_sgd.py',
    '../_base_/models/resnet18-w16_cifar.py',
]

# multi-crop: 2 views of 32 px and 2 of 16 px
_num_crops = [2, 2]
# the 32 px views: demo_two_view.py's
_view_pipeline1 = _base_.pop('_view_pipeline')  # noqa: F821
# the small views: the same crop at 16 px from 20-50 % of the image, the
# same colour jitter
_view_pipeline2 = [
    dict(_view_pipeline1[0], scale=16, crop_ratio_range=(0.2, 0.5)),
    _view_pipeline1[1],
]
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(
        type='MultiView',
        num_views=_num_crops,
        transforms=[_view_pipeline1, _view_pipeline2],
    ),
    dict(type='PackInputs'),
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))

model = dict(
    type='SwAV',
    data_preprocessor={{_base_.data_preprocessor}},
    neck=dict(
        type='SwAVNeck',
        in_channels='auto',
        hid_channels=128,
        out_channels=64,
        with_avg_pool=True,
    ),
    head=dict(
        type='SwAVHead',
        loss=dict(
            type='SwAVLoss',
            feat_dim=64,
            epsilon=0.05,
            # 0.1 (ImageNet) collapses here: see README.md, "Temperature"
            temperature=0.5,
            num_crops=_num_crops,
            num_prototypes=30,
        ),
    ),
)
# the queue of past features starts at epoch 2; prototypes stay frozen for
# the first 20 iterations (5005 on ImageNet). SwAVQueueHook is mmpretrain's
# SwAVHook with the queue kept in checkpoints (exact mid-epoch resume).
custom_hooks = [
    dict(
        type='SwAVQueueHook',
        priority='VERY_HIGH',
        batch_size=64,
        epoch_queue_starts=2,
        crops_for_assign=[0, 1],
        feat_dim=64,
        queue_length=512,
        frozen_layers_cfg=dict(prototypes=20),
    )
]

# lr 0.5 with temperature 0.5: 82.73 kNN (lr 0.1: 66.85), README.md
optim_wrapper = dict(optimizer=dict(lr=0.5))
