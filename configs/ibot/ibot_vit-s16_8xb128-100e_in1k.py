# iBOT (Zhou et al. 2021, https://arxiv.org/abs/2111.07832) ViT-S/16 on
# ImageNet-1k, 100 epochs, total batch 1024: DINO's ViT-S recipe plus
# masked-patch self-distillation with a shared head of 8192 prototypes
# (iBOT ViT-S/16 setting), block masks of ratio 0.1-0.5 on half of the
# global crops, EMA centring for both losses, loss weights 1 / 1.
_base_ = [
    '../dino/dino_vit-s16_8xb128-100e_in1k.py',
    '../_base_/datasets/multicrop_224px.py',
]

_n_prototypes = 8192
train_pipeline = _base_.pop('_multicrop_224px')['ibot']  # noqa: F821
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
model = dict(
    type='iBOT',
    backbone=dict(out_type='raw'),
    head=dict(n_prototypes=_n_prototypes),
    patch_head=None,
    loss=dict(out_dim=_n_prototypes),
    ibot_loss=dict(
        type='iBOTPatchLoss',
        out_dim=_n_prototypes,
        student_temp=0.1,
        centering='centering',
        center_momentum=0.9,
    ),
    loss_weights=dict(dino=1.0, ibot=1.0),
)
