# Trains the tiny MAE of mae_tiny.py for 400 iterations on data/demo/train
# (about 10 min on a busy 2-core CPU); used for the picture in
# docs/en/tools.md:
#   python tools/train.py tests/data/configs/mae_tiny_train_demo.py
_base_ = ['./mae_tiny.py']
train_dataloader = dict(
    batch_size=64,
    num_workers=2,
    persistent_workers=True,
    drop_last=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type='CustomDataset',
        data_root='data/demo/train',
        with_label=False,
        pipeline=[
            dict(type='LoadImageFromFile'),
            dict(type='RandomFlip', prob=0.0),
            dict(type='PackInputs'),
        ],
    ),
)
optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(
        type='AdamW', lr=2e-3, betas=(0.9, 0.95), weight_decay=0.05
    ),
)
train_cfg = dict(type='IterBasedTrainLoop', max_iters=400)
param_scheduler = [
    dict(type='CosineAnnealingLR', T_max=400, by_epoch=False, begin=0, end=400)
]
default_hooks = dict(
    logger=dict(interval=50),
    checkpoint=dict(type='CheckpointHook', interval=400, by_epoch=False),
)
randomness = dict(seed=0)
