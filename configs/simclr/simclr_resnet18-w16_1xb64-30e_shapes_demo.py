# SimCLR demo (simclr_resnet18-w16_1xb64-10e_demo.py) on the bundled 64 px
# shapes set instead of the digits, a recipe that learns shape there
# (../_base_/datasets/shapes_16px_views.py says why): views and kNN at
# 16 px, any turn by 90 degrees and reflection, colour jitter over the
# full hue circle, grayscale half the time, 30 epochs. With 64 px views,
# milder colour jitter and 10 epochs kNN stayed at its random init
# (README.md, docs/en/model_zoo.md).
#   python tools/misc/make_shapes_dataset.py data/shapes
#   python tools/train.py \
#       configs/simclr/simclr_resnet18-w16_1xb64-30e_shapes_demo.py
_base_ = [
    './simclr_resnet18-w16_1xb64-10e_demo.py',
    '../_base_/datasets/shapes_16px_views.py',
]

train_pipeline = {{_base_._shapes16_train_pipeline}}
train_dataloader = dict(
    dataset=dict(data_root='data/shapes/train', pipeline=train_pipeline)
)
val_dataloader = {{_base_._shapes16_knn_dataloader}}
test_dataloader = val_dataloader
model = dict(
    data_preprocessor=dict(
        mean={{_base_._shapes16_mean}}, std={{_base_._shapes16_std}}
    )
)
train_cfg = dict(max_epochs=30)
