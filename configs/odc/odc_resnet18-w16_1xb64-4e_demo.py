# ODC (Zhan et al. 2020, https://arxiv.org/abs/2006.10645) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a CIFAR-style ResNet-18 of width 16, 4 epochs on CPU, then a kNN
# evaluation on data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/odc/odc_resnet18-w16_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_single_view_jitter.py',
    '../_base_/schedules/demo_4e_sgd.py',
    '../_base_/models/resnet18-w16_cifar.py',
    '../_base_/models/demo_projector_128-64.py',
]

# deterministic pipeline for the features that are clustered
_extract_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='PackInputs'),
]

# num_samples = number of training images (the sample memory length)
_num_classes = 20
__proj = _base_.pop('_demo_projector')  # noqa: F821
model = dict(
    type='ODC',
    num_samples=1438,
    num_classes=_num_classes,
    feat_dim=64,
    memory_momentum=0.5,
    min_cluster=20,
    data_preprocessor={{_base_.data_preprocessor}},
    neck=__proj['neck'],
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

optim_wrapper = dict(optimizer=dict(lr=0.05))
