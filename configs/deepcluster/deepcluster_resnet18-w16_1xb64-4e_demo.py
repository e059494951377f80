# DeepCluster (Caron et al. 2018, https://arxiv.org/abs/1807.05520) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a CIFAR-style ResNet-18 of width 16, 4 epochs on CPU, then a kNN
# evaluation on data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/deepcluster/deepcluster_resnet18-w16_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_single_view_jitter.py',
    '../_base_/schedules/demo_4e_sgd.py',
    '../_base_/models/resnet18-w16_cifar.py',
]

# deterministic pipeline for the features that are clustered
_extract_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='PackInputs'),
]

train_dataloader = dict(
    # replaces the base's shuffling DefaultSampler
    sampler=dict(_delete_=True, type='ClusterUniformSampler', seed=0),
)

# num_samples = number of training images (the pseudo-label buffer length)
_num_classes = 20
model = dict(
    type='DeepCluster',
    num_samples=1438,
    num_classes=_num_classes,
    data_preprocessor={{_base_.data_preprocessor}},
    neck=dict(type='GlobalAveragePooling'),
    head=dict(
        type='PretextClsHead', in_channels='auto', num_classes=_num_classes
    ),
)
custom_hooks = [
    dict(
        type='DeepClusterHook',
        extract_pipeline=_extract_pipeline,
        interval=1,
        batch_size=128,
    )
]

optim_wrapper = dict(optimizer=dict(lr=0.05))
