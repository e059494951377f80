# Linear probe of a frozen DINOv2-style ViT-S/14 on ImageNet-1k: the
# protocol of linear_vit-small-p16_8xb128-coslr-100e_in1k.py (a linear
# layer on the CLS token, whole backbone frozen). For a DINOv2 / iBOT /
# DINO training checkpoint (its teacher):
#   bash tools/dist_train.sh \
#       configs/benchmarks/linear_probe/linear_vit-small-p14_8xb128-coslr-100e_in1k.py 8 \
#       --cfg-options model.backbone.init_cfg.checkpoint=CKPT
_base_ = ['./linear_vit-small-p16_8xb128-coslr-100e_in1k.py']

model = dict(
    backbone=dict(
        _delete_=True,
        type='DINOVisionTransformer',
        arch='small',
        img_size=224,
        patch_size=14,
        out_type='cls_token',
        frozen_stages=12,
        init_cfg=dict(
            type='Pretrained', checkpoint='', prefix='teacher.backbone.'
        ),
    ),
)
