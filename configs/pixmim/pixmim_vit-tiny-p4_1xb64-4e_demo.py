# PixMIM (Liu et al. 2023, https://arxiv.org/abs/2303.02416) on the bundled
# 32x32 demo digits (tools/misc/make_demo_dataset.py): the MAE demo's 4-layer
# ViT (96 dims, 4 px patches), a low-pass target (radius 6 cycles per 32 px
# image: the paper's 40 per 224 px, scaled) and a simple resized crop.
# 4 epochs on CPU, then a kNN evaluation on data/demo/val.
#   python tools/train.py configs/pixmim/pixmim_vit-tiny-p4_1xb64-4e_demo.py
_base_ = '../mae/mae_vit-tiny-p4_1xb64-4e_demo.py'

model = dict(type='PixMIM', low_freq_radius=6)

# simple resized crop: short side to 32, a 32 px crop of the 1 px
# reflect-padded image, a horizontal flip
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='ResizeEdge', scale=32, edge='short'),
    dict(type='RandomCrop', crop_size=32, padding=1, padding_mode='reflect'),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackInputs'),
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
