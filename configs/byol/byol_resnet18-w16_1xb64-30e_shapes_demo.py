# BYOL demo (byol_resnet18-w16_1xb64-4e_demo.py) on the bundled 64 px
# shapes set instead of the digits, with the 16 px views and kNN with
# which SimCLR learns shape there (../_base_/datasets/shapes_16px_views.py)
# and 30 epochs.
#   python tools/misc/make_shapes_dataset.py data/shapes
#   python tools/train.py \
#       configs/byol/byol_resnet18-w16_1xb64-30e_shapes_demo.py
_base_ = [
    './byol_resnet18-w16_1xb64-4e_demo.py',
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
