# ODC (Zhan et al. 2020, https://arxiv.org/abs/2006.10645) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a CIFAR-style ResNet-18 of width 16, 4 epochs on CPU, then a kNN
# evaluation on data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/odc/odc_resnet18-w16_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_knn.py',
    '../_base_/schedules/demo_4e.py',
]

data_preprocessor = dict(
    type='SelfSupDataPreprocessor',
    mean=[33.0, 33.0, 33.0],
    std=[60.0, 60.0, 60.0],
    to_rgb=True,
)

train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(
        type='RandomResizedCrop',
        scale=32,
        crop_ratio_range=(0.5, 1.0),
        backend='cv2',
    ),
    dict(
        type='RandomApply',
        transforms=[dict(type='ColorJitter', brightness=0.4, contrast=0.4)],
        prob=0.8,
    ),
    dict(type='PackInputs'),
]
# deterministic pipeline for the features that are clustered
_extract_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='PackInputs'),
]

train_dataloader = dict(
    batch_size=64,
    num_workers=2,
    persistent_workers=True,
    drop_last=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type='ImageFolderDataset',
        data_root='data/demo/train',
        pipeline=train_pipeline,
    ),
)

_backbone = dict(
    type='ResNet_CIFAR',
    depth=18,
    stem_channels=16,
    base_channels=16,
    zero_init_residual=True,
)

# num_samples = number of training images (the sample memory length)
_num_classes = 20
model = dict(
    type='ODC',
    num_samples=1438,
    num_classes=_num_classes,
    feat_dim=64,
    memory_momentum=0.5,
    min_cluster=20,
    data_preprocessor=data_preprocessor,
    backbone=_backbone,
    neck=dict(
        type='NonLinearNeck',
        in_channels='auto',
        hid_channels=128,
        out_channels=64,
        num_layers=2,
        with_avg_pool=True,
    ),
    head=dict(
        type='PretextClsHead', in_channels='auto', num_classes=_num_classes
    ),
)
custom_hooks = [
    dict(
        type='ODCHook',
        extract_pipeline=_extract_pipeline,
        centroids_update_interval=10,
        deal_with_small_clusters_interval=1,
        batch_size=128,
    )
]

optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='SGD', lr=0.05, momentum=0.9, weight_decay=5e-4),
)
auto_scale_lr = dict(base_batch_size=64)
randomness = dict(seed=0)
