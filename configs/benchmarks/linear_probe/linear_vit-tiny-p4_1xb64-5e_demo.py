# Linear probe of the demo ViT-tiny (4 blocks, 96 dims, 3 heads, 4 px
# patches on 32 px images: the encoder of the MAE, EVA, MILAN, MaskFeat,
# BEiT and CAE demos) on the bundled digits (data/demo). Everything in the
# ViT is frozen (frozen_stages = all 4 blocks, so the patch embedding,
# CLS token, position embedding and final norm too); only the linear head
# on the CLS token learns. 5 epochs, a minute or two on CPU.
#   python tools/train.py \
#       configs/benchmarks/linear_probe/linear_vit-tiny-p4_1xb64-5e_demo.py \
#       --cfg-options \
#       model.backbone.init_cfg.checkpoint=work_dirs/mae_demo/epoch_4.pth
# The checkpoint is the only key to set; its backbone weights are read with
# prefix 'backbone.' (see configs/benchmarks/README.md for other prefixes).
# Random-init baseline: model.backbone.init_cfg=None.
_base_ = [
    '../../_base_/datasets/demo_linear.py',
    '../../_base_/schedules/linear_probe_5e.py',  # SGD, cosine, 5 epochs
    '../../_base_/models/vit-tiny-p4_digits_cls.py',
]

# all 4 blocks frozen; the backbone's weights from the checkpoint
model = dict(
    backbone=dict(
        frozen_stages=4,
        init_cfg=dict(type='Pretrained', checkpoint='', prefix='backbone.'),
    )
)
optim_wrapper = dict(optimizer=dict(lr=0.1))
