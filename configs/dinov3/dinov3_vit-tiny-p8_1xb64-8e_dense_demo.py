# DINOv3 demo on the bundled dense set (tools/misc/make_dense_dataset.py
# data/dense): the DINOv3 digits demo with 8 px patches on 64 px crops (2 x 64
# + 4 x 32, the same 64 tokens a global crop), pretrained on the 800 64 px
# scenes of data/dense/images/training (no labels), 8 epochs (12 iterations
# each, about 3 CPU minutes; the Gram anchoring, which starts at iteration 110,
# is not reached). No kNN during training (the scenes have no image label);
# judge it with the frozen segmentation probe:
#   python .dev_scripts/dense_zoo.py \
#       configs/dinov3/dinov3_vit-tiny-p8_1xb64-8e_dense_demo.py \
#       --data data/dense
_base_ = ['./dinov3_vit-tiny-p4_1xb64-10e_demo.py']

_patch_size = 8
train_pipeline = _base_.train_pipeline  # noqa: F821
train_pipeline[1].update(global_size=64, local_size=32, blur_kernel_size=5)
train_dataloader = dict(
    collate_fn=dict(patch_size=_patch_size),  # masks on the 8 px grid
    dataset=dict(
        data_root='data/dense/images/training', pipeline=train_pipeline
    ),
)
# pixel statistics of data/dense (all channels): mean ~ 127, std ~ 51
model = dict(
    data_preprocessor=dict(mean=[127.0, 127.0, 127.0], std=[51.0, 51.0, 51.0]),
    backbone=dict(patch_size=_patch_size),
)
train_cfg = dict(max_epochs=8, val_interval=1000)
val_dataloader = None
val_evaluator = None
val_cfg = None
test_dataloader = None
test_evaluator = None
test_cfg = None
