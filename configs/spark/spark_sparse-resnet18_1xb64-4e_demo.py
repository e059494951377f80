# SparK (Tian et al. 2023, https://arxiv.org/abs/2301.03580) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a sparse ResNet-18 on digits upsampled to 64 px, 4 epochs on CPU, then a kNN evaluation on
# data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/spark/spark_sparse-resnet18_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_single_view_64px.py',
    '../_base_/schedules/mim_demo_4e.py',
]

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
