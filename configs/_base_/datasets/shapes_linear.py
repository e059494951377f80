# Linear-probe data on the bundled shapes set (64 px, data/shapes made by
# tools/misc/make_shapes_dataset.py): as demo_linear.py, other folder.
_base_ = ['./demo_linear.py']

_linear_data_root = 'data/shapes'
train_dataloader = dict(dataset=dict(data_root=_linear_data_root))
val_dataloader = dict(dataset=dict(data_root=_linear_data_root))
test_dataloader = val_dataloader
