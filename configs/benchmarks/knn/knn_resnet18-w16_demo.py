# kNN (k=20, T=0.07) of the SimCLR demo backbone (CIFAR ResNet-18 w16) on
# data/demo: train split = bank, val split = queries. About 10 s on CPU.
#   python tools/test.py configs/benchmarks/knn/knn_resnet18-w16_demo.py \
#       work_dirs/simclr_demo/epoch_10.pth
_base_ = [
    '../../_base_/datasets/demo_knn.py',
    '../../_base_/default_runtime.py',
    '../../_base_/models/resnet18-w16_digits_cls.py',
]

# no head: model(x, mode='tensor') then returns the pooled features
model = dict(head=None)

custom_hooks = [dict(type='PretrainedInitHook')]
