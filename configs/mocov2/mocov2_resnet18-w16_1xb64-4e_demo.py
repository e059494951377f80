# MoCo v2 (Chen et al. 2020, https://arxiv.org/abs/2003.04297) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a CIFAR-style ResNet-18 of width 16, 4 epochs on CPU, then a kNN
# evaluation on data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/mocov2/mocov2_resnet18-w16_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_two_view.py',
    '../_base_/schedules/demo_4e_sgd.py',
    '../_base_/models/resnet18-w16_cifar.py',
    '../_base_/models/demo_projector_128-64.py',
]

# Two changes from the ImageNet recipe make it learn in the demo's 88
# iterations (README.md, "Why the demo differs"): a BatchNorm in the
# projector (MoCo v2's fc-ReLU-fc gives every image of a random network
# nearly the same projection, cosine 0.93) and a key encoder that follows
# the online one (mmpretrain's `momentum` is the online weight of each EMA
# update: 0.01 keeps the keys near the random init for the whole run). The
# queue is 4 batches, not 73% of an epoch (which held a stale key
# of the query's own image as a negative for a quarter of the queries).
__proj = _base_.pop('_demo_projector')  # noqa: F821
model = dict(
    type='MoCo',
    queue_len=256,
    feat_dim=64,
    momentum=0.99,
    data_preprocessor={{_base_.data_preprocessor}},
    neck=__proj['neck'],
    head=__proj['head'],
)

optim_wrapper = dict(optimizer=dict(lr=0.06))
