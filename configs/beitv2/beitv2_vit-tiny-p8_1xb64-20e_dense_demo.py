# BEiT v2 demo on the bundled dense set (tools/misc/make_dense_dataset.py
# data/dense): the BEiT-ViT-tiny/8 of the BEiT v2 shapes demo, pretrained on
# the 800 64 px scenes of data/dense/images/training (no labels), 20 epochs (12
# iterations each, about 3 CPU minutes). No kNN during training (the scenes
# have no image label); judge it with the frozen segmentation probe:
#   python .dev_scripts/dense_zoo.py \
#       configs/beitv2/beitv2_vit-tiny-p8_1xb64-20e_dense_demo.py \
#       --data data/dense
_base_ = ['./beitv2_vit-tiny-p8_1xb64-4e_shapes_demo.py']

train_dataloader = dict(
    dataset=dict(data_root='data/dense/images/training'),
)
# pixel statistics of data/dense (all channels): mean ~ 127, std ~ 51
model = dict(
    data_preprocessor=dict(mean=[127.0, 127.0, 127.0], std=[51.0, 51.0, 51.0]),
)
train_cfg = dict(max_epochs=20, val_interval=1000)
val_dataloader = None
val_evaluator = None
val_cfg = None
test_dataloader = None
test_evaluator = None
test_cfg = None
