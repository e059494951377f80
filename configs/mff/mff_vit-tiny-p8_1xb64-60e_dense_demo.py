# MFF demo on the bundled dense set (tools/misc/make_dense_dataset.py
# data/dense): the MAE dense demo (ViT-tiny/8, 64 px, the dense images and
# statistics, no validation) with the outputs of layers 1 and 3 fused, as
# the MFF digits demo, 60 epochs (12 iterations each, about 3 CPU minutes).
# Judge it with the frozen segmentation probe:
#   python .dev_scripts/dense_zoo.py \
#       configs/mff/mff_vit-tiny-p8_1xb64-60e_dense_demo.py --data data/dense
_base_ = ['../mae/mae_vit-tiny-p8_1xb64-40e_dense_demo.py']

model = dict(
    type='MFFFullImage',
    backbone=dict(type='MFFViT', out_indices=[1, 3]),
)
train_cfg = dict(max_epochs=60)
