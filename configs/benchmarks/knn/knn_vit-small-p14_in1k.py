# Weighted kNN (k=20, T=0.07) of a frozen DINOv2-style ViT-S/14 on
# ImageNet-1k; the same protocol as knn_vit-small-p16_in1k.py. For a
# DINOv2 / iBOT / DINO training checkpoint (the teacher is evaluated):
#   python tools/test.py configs/benchmarks/knn/knn_vit-small-p14_in1k.py CKPT
# (tools/test.py loads CKPT's backbone, teacher first, any format the
# warm-start loader reads, and stops when it does not fit). Or:
#   python tools/misc/knn_eval.py configs/benchmarks/knn/knn_vit-small-p14_in1k.py \
#       --checkpoint CKPT
_base_ = ['./knn_vit-small-p16_in1k.py']

model = dict(
    backbone=dict(
        _delete_=True,
        type='DINOVisionTransformer',
        arch='small',
        img_size=224,
        patch_size=14,
        out_type='cls_token',
        init_cfg=dict(
            type='Pretrained', checkpoint='', prefix='teacher.backbone.'
        ),
    ),
)
