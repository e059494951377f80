# MFF (Liu et al. 2023, https://arxiv.org/abs/2303.16156) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# the MAE demo (4-layer ViT, 96 dims, 4 px patches, same data and optimiser)
# trained 16 epochs, with the outputs of layers 1 and 3 fused, then a kNN
# evaluation on data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/mff/mff_vit-tiny-p4_1xb64-16e_demo.py
_base_ = '../mae/mae_vit-tiny-p4_1xb64-4e_demo.py'

model = dict(
    type='MFFFullImage',  # MFF + whole-image features for kNN
    backbone=dict(type='MFFViT', out_indices=[1, 3]),
)
# 16 epochs (352 iterations): after the MAE demo's 4 the fused features were
# below random init by kNN and by the linear probe; see README.md
train_cfg = dict(max_epochs=16)
