# Linear probe of the ResNet demo backbone (CIFAR ResNet-18 w16: SimCLR,
# MoCo, BYOL, ... demos) on the bundled 64 px shapes set (data/shapes):
# as linear_resnet18-w16_1xb64-5e_demo.py (backbone frozen, BN statistics
# frozen too), other data and pixel statistics.
#   python tools/train.py \
#       configs/benchmarks/linear_probe/linear_resnet18-w16_1xb64-5e_shapes.py \
#       --cfg-options model.backbone.init_cfg.checkpoint=CKPT
_base_ = ['./linear_resnet18-w16_1xb64-5e_demo.py']

_linear_data_root = 'data/shapes'
train_dataloader = dict(dataset=dict(data_root=_linear_data_root))
val_dataloader = dict(dataset=dict(data_root=_linear_data_root))
test_dataloader = val_dataloader
# pixel statistics of data/shapes (all channels): mean ~ 70, std ~ 40
model = dict(
    data_preprocessor=dict(mean=[70.0, 70.0, 70.0], std=[40.0, 40.0, 40.0])
)
