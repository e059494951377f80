# kNN evaluation on the bundled shapes set (64 px, 10 classes, made by
# tools/misc/make_shapes_dataset.py data/shapes): the labelled train split
# is the feature bank, the val split the queries.
_base_ = ['./demo_knn.py']

_knn_data_root = 'data/shapes'
_knn_dataloader = dict(
    dataset=dict(
        bank=dict(data_root=_knn_data_root),
        query=dict(data_root=_knn_data_root),
    ),
)
val_dataloader = _knn_dataloader
test_dataloader = _knn_dataloader
