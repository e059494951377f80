# MILAN demo on the bundled dense set (tools/misc/make_dense_dataset.py
# data/dense): the ViT-tiny/8 of the MILAN shapes demo, pretrained on the 800
# 64 px scenes of data/dense/images/training (no labels), 60 epochs (12
# iterations each, about 3 CPU minutes). No kNN during training (the scenes
# have no image label); judge it with the frozen segmentation probe:
#   python .dev_scripts/dense_zoo.py \
#       configs/milan/milan_vit-tiny-p8_1xb64-60e_dense_demo.py \
#       --data data/dense
_base_ = ['./milan_vit-tiny-p8_1xb64-40e_shapes_demo.py']

train_dataloader = dict(
    dataset=dict(data_root='data/dense/images/training'),
)
# pixel statistics of data/dense (all channels): mean ~ 127, std ~ 51
model = dict(
    data_preprocessor=dict(mean=[127.0, 127.0, 127.0], std=[51.0, 51.0, 51.0]),
)
train_cfg = dict(max_epochs=60, val_interval=1000)
val_dataloader = None
val_evaluator = None
val_cfg = None
test_dataloader = None
test_evaluator = None
test_cfg = None
