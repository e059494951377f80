# NPID (Wu et al. 2018, https://arxiv.org/abs/1805.01978) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a CIFAR-style ResNet-18 of width 16, 4 epochs on CPU, then a kNN
# evaluation on data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/npid/npid_resnet18-w16_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_single_view_jitter.py',
    '../_base_/schedules/demo_4e_sgd.py',
    '../_base_/models/resnet18-w16_cifar.py',
    '../_base_/models/demo_projector_128-64.py',
]

# num_samples = number of training images (the memory bank length)
__proj = _base_.pop('_demo_projector')  # noqa: F821
model = dict(
    type='NPID',
    num_samples=1438,
    feat_dim=64,
    # 256 negatives, not 1024: drawn uniformly from 1,438 bank entries,
    # 1024 hold the query's own entry for about half of the queries (256:
    # 16 %). And a projector with BatchNorm, not MoCo v2's fc-ReLU-fc,
    # which gives every image of a random network nearly the same vector.
    # With lr 0.1 (was 0.03) the demo learns (README.md).
    neg_num=256,
    bank_momentum=0.5,
    data_preprocessor={{_base_.data_preprocessor}},
    neck=__proj['neck'],
    head=dict(
        type='ContrastiveHead',
        loss=dict(type='CrossEntropyLoss'),
        temperature=0.07,
    ),
)

optim_wrapper = dict(optimizer=dict(lr=0.1))
