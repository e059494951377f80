# MixMIM demo on the bundled dense set (tools/misc/make_dense_dataset.py
# data/dense): the MixMIM-tiny of the digits demo (64 px random resized
# crops), pretrained on the 800 64 px scenes of data/dense/images/training
# (no labels), 20 epochs (12 iterations each, about 3 CPU minutes). MixMIM
# is hierarchical (stride 32): the probe reads its last stage, a 2x2 map
# at 64 px, so it can only place coarse blobs. No kNN during training (the
# scenes have no image label); judge it with the frozen segmentation probe:
#   python .dev_scripts/dense_zoo.py \
#       configs/mixmim/mixmim_mixmim-tiny_1xb64-20e_dense_demo.py \
#       --data data/dense
_base_ = ['./mixmim_mixmim-tiny_1xb64-4e_demo.py']

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
