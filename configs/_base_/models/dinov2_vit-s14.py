# DINOv2 ViT-S/14 (https://arxiv.org/abs/2304.07193): shared CLS/patch
# head of 65536 prototypes whose input size follows the backbone
# (in_channels='auto', so `model.backbone.arch=base` alone is a ViT-B),
# Sinkhorn-Knopp teacher targets, iBOT patch loss, KoLeo 0.1.
# dino_vit-s16.py's ViT-S and DINO head, with DINOv2's patches of 14,
# LayerScale and raw token output; its losses replace DINO's.
_base_ = './dino_vit-s16.py'

model = dict(
    type='DINOv2',
    backbone=dict(
        patch_size=14,
        num_register_tokens=0,
        layer_scale_init_value=1e-5,
        with_cp=False,
        out_type='raw',
        # Continued pretraining from converted official weights
        # (tools/model_converters/dinov2_to_mmssl.py): student and teacher
        # both start from it, heads are fresh:
        # init_cfg=dict(type='Pretrained', checkpoint='ckpt.pth',
        #               prefix='backbone.'),
    ),
    patch_head=None,  # None: share `head`; a DINOHead dict: separate head
    loss=dict(
        _delete_=True,
        type='DINOLoss',
        out_dim=65536,
        student_temp=0.1,
        centering='sinkhorn_knopp',
        sk_iters=3,
    ),
    ibot_loss=dict(
        type='iBOTPatchLoss',
        out_dim=65536,
        student_temp=0.1,
        centering='sinkhorn_knopp',
        sk_iters=3,
    ),
    koleo_loss=dict(type='KoLeoLoss'),
    loss_weights=dict(dino=1.0, ibot=1.0, koleo=0.1),
)
