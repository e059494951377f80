# EVA (Fang et al. 2023, https://arxiv.org/abs/2211.07636), MAE-style on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a 4-layer ViT (96 dims, 4 px patches), 4 epochs on CPU, then a kNN evaluation on
# data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/eva/eva-mae-style_vit-tiny-p4_1xb64-4e_demo.py
# Data, model sizes, the stand-in CLIP target (StandInCLIPTarget: random,
# no download, teaches nothing semantic), AdamW, schedule and runtime: the
# MILAN demo's. EVA differs in its encoder and decoder: MAE's, reconstructing
# the target's features.
_base_ = '../milan/milan_vit-tiny-p4_1xb64-4e_demo.py'

model = dict(
    type='EVA',
    backbone=dict(type='MAEViT'),
    neck=dict(type='MAEPretrainDecoder', mlp_ratio=4),
)
