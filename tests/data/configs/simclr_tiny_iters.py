# The tiny SimCLR of simclr_tiny.py trained for 30 iterations of batch 2 on
# the demo digits (set train_dataloader.dataset.data_root), a fraction of a
# second per iteration, for the signal, lock and resume tests
# (tests/test_engine/test_resume/); needs tests/data on PYTHONPATH.
_base_ = ['./simclr_tiny.py']

_view_pipeline = [
    dict(type='RandomResizedCrop', scale=16, backend='cv2'),
]
train_dataloader = dict(
    batch_size=2,
    num_workers=0,
    persistent_workers=False,
    drop_last=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type='ImageFolderDataset',
        data_root='data/demo/train',
        pipeline=[
            dict(type='LoadImageRobust'),
            dict(type='MultiView', num_views=2, transforms=[_view_pipeline]),
            dict(type='PackInputs'),
        ],
    ),
)
optim_wrapper = dict(
    type='OptimWrapper', optimizer=dict(type='SGD', lr=0.01, momentum=0.9)
)
train_cfg = dict(type='IterBasedTrainLoop', max_iters=30)
default_hooks = dict(
    logger=dict(type='LoggerHook', interval=1),
    checkpoint=dict(type='AtomicCheckpointHook', interval=1000, by_epoch=False),
)
# a short sleep per iteration, so a signal sent after iteration k lands
# well before the end of the run
custom_imports = dict(imports=['slow_iter_hook'])
custom_hooks = [dict(type='SlowIterHook', seconds=0.05)]
log_processor = dict(by_epoch=False)
randomness = dict(seed=0)
