# SparK (Tian et al. 2023, https://arxiv.org/abs/2301.03580) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a sparse ResNet-18 on digits upsampled to 64 px, 4 epochs on CPU, then a kNN evaluation on
# data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/spark/spark_sparse-resnet18_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_train.py',
    '../_base_/schedules/mim_demo_4e.py',
]

train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(
        type='RandomResizedCrop',
        scale=64,
        crop_ratio_range=(0.5, 1.0),
        backend='cv2',
    ),
    dict(type='PackInputs'),
]

train_dataloader = dict(dataset=dict(pipeline=train_pipeline))

# 64 px input, stride 32: masks over a 2x2 grid (coarse, but it runs)
model = dict(
    type='SparKFullImage',  # SparK + dense feature extraction for kNN
    input_size=64,
    downsample_raito=32,
    mask_ratio=0.5,
    enc_dec_norm_cfg=dict(type='SparseBatchNorm2d'),
    enc_dec_norm_dim=512,
    data_preprocessor={{_base_.data_preprocessor}},
    backbone=dict(type='SparseResNet', depth=18, out_indices=(0, 1, 2, 3)),
    neck=dict(
        type='SparKLightDecoder',
        feature_dim=128,
        upsample_ratio=32,
        mid_channels=0,
        last_act=False,
    ),
    head=dict(
        type='SparKPretrainHead',
        loss=dict(type='PixelReconstructionLoss', criterion='L2'),
    ),
)

optim_wrapper = dict(optimizer=dict(lr=0.001))

# kNN evaluation at the training resolution (64 px)
_knn_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=(64, 64), backend='cv2'),
    dict(type='PackInputs'),
]
val_dataloader = dict(
    dataset=dict(
        bank=dict(pipeline=_knn_pipeline), query=dict(pipeline=_knn_pipeline)
    )
)
test_dataloader = val_dataloader
