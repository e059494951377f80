# iTPN demo on the bundled dense set (tools/misc/make_dense_dataset.py
# data/dense): the HiViT-tiny/8 of the iTPN digits demo on 64 px random
# resized crops and flips (the MAE shapes demo's; an 8x8 token grid),
# pretrained on the 800 64 px scenes of data/dense/images/training (no
# labels), 32 epochs (12 iterations each, about 3 CPU minutes). The probe
# reads HiViT's last stage, an 8x8 map (no CLS token). No kNN during
# training (the scenes have no image label); judge it with the frozen
# segmentation probe:
#   python .dev_scripts/dense_zoo.py \
#       configs/itpn/itpn-pixel_hivit-tiny-p8_1xb64-32e_dense_demo.py \
#       --data data/dense
_base_ = [
    './itpn-pixel_hivit-tiny-p8_1xb64-4e_demo.py',
    '../_base_/datasets/shapes_64px_mim.py',
]
__crop_flip = _base_.pop('_shapes_64px')['crop_flip']  # noqa: F821

train_dataloader = dict(
    dataset=dict(
        data_root='data/dense/images/training',
        pipeline=__crop_flip + [dict(type='PackInputs')],
    ),
)
# pixel statistics of data/dense (all channels): mean ~ 127, std ~ 51
model = dict(
    data_preprocessor=dict(mean=[127.0, 127.0, 127.0], std=[51.0, 51.0, 51.0]),
    backbone=dict(img_size=64),
    neck=dict(num_patches=(64 // 8) ** 2),
)
train_cfg = dict(max_epochs=32, val_interval=1000)
val_dataloader = None
val_evaluator = None
val_cfg = None
test_dataloader = None
test_evaluator = None
test_cfg = None
