# SimCLR (Chen et al. 2020, https://arxiv.org/abs/2002.05709) on the bundled
# 32x32 demo digits: a CIFAR-style ResNet-18 of width 16, 10 epochs on CPU
# in about two minutes, ending with a kNN evaluation on data/demo/val.
#   python tools/misc/make_demo_dataset.py data/demo
#   python tools/train.py configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py
_base_ = [
    '../_base_/datasets/demo_two_view.py',
    '../_base_/schedules/demo_4e_sgd.py',
    '../_base_/models/demo_projector_128-64.py',
    '../_base_/schedules/warmup_cosine.py',
]

# demo_two_view.py's views, read with LoadImageRobust
train_pipeline = [
    dict(type='LoadImageRobust'),
    dict(type='MultiView', num_views=2, transforms=[_base_._view_pipeline]),
    dict(type='PackInputs'),
]
# data_root (data/demo/train, from demo_train.py) may be any folder(s) of
# images: a path or a list of paths, searched recursively; unreadable files
# are skipped and counted
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))

__proj = _base_.pop('_demo_projector')  # noqa: F821
model = dict(
    type='SimCLR',
    data_preprocessor={{_base_.data_preprocessor}},
    backbone=dict(
        type='ResNet_CIFAR',
        depth=18,
        stem_channels=16,
        base_channels=16,
        zero_init_residual=True,
    ),
    neck=__proj['neck'],
    head=__proj['head'],
)

optim_wrapper = dict(optimizer=dict(lr=0.1))
# 10 epochs: the warm-up stays one epoch (10%), a checkpoint every 5 (50%)
param_scheduler = _base_.pop('_warmup_cosine')['simclr_demo']  # noqa: F821
train_cfg = dict(max_epochs=10)
default_hooks = dict(checkpoint=dict(interval='50%', max_keep_ckpts=2))
custom_hooks = [dict(type='BadFileSummaryHook', interval=50)]
