# MAE demo on the bundled dense set (tools/misc/make_dense_dataset.py
# data/dense): the ViT-tiny/8 of the MAE shapes demo (75 % of the 64
# tokens masked, 64 px random resized crops and flips), pretrained on the
# 800 64 px scenes of data/dense/images/training (no labels), 40 epochs
# (12 iterations each). No kNN during training (the scenes have no image
# label); judge it with the frozen segmentation probe:
#   python tools/misc/make_dense_dataset.py data/dense
#   python tools/train.py configs/mae/mae_vit-tiny-p8_1xb64-40e_dense_demo.py
#   python tools/eval.py configs/mae/mae_vit-tiny-p8_1xb64-40e_dense_demo.py \
#       --task seg --data data/dense --checkpoint work_dirs/.../epoch_40.pth
_base_ = ['./mae_vit-tiny-p8_1xb64-40e_shapes_demo.py']

train_dataloader = dict(
    dataset=dict(data_root='data/dense/images/training'),
)
# pixel statistics of data/dense (all channels): mean ~ 127, std ~ 51
model = dict(
    data_preprocessor=dict(mean=[127.0, 127.0, 127.0], std=[51.0, 51.0, 51.0]),
)
train_cfg = dict(max_epochs=40, val_interval=1000)
val_dataloader = None
val_evaluator = None
val_cfg = None
test_dataloader = None
test_evaluator = None
test_cfg = None
