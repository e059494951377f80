# DINOv2 ViT-S/14 (https://arxiv.org/abs/2304.07193): shared CLS/patch
# head of 65536 prototypes whose input size follows the backbone
# (in_channels='auto', so `model.backbone.arch=base` alone is a ViT-B),
# Sinkhorn-Knopp teacher targets, iBOT patch loss, KoLeo 0.1.
model = dict(
    type='DINOv2',
    data_preprocessor=dict(
        type='SelfSupDataPreprocessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        to_rgb=True,
    ),
    num_global_crops=2,
    backbone=dict(
        type='DINOVisionTransformer',
        arch='small',
        img_size=224,
        patch_size=14,
        num_register_tokens=0,
        layer_scale_init_value=1e-5,
        drop_path_rate=0.1,
        drop_path_mode='static',  # fixed shapes, exact rate, no host sync
        with_cp=False,
        out_type='raw',
        # Continued pretraining from converted official weights
        # (tools/model_converters/dinov2_to_mmssl.py): student and teacher
        # both start from it, heads are fresh:
        # init_cfg=dict(type='Pretrained', checkpoint='ckpt.pth',
        #               prefix='backbone.'),
    ),
    head=dict(
        type='DINOHead',
        in_channels='auto',  # the backbone's width,
        n_prototypes=65536,
        hidden_channels=2048,
        bottleneck_channels=256,
        nlayers=3,
        norm_last_layer=False,
    ),
    patch_head=None,  # None: share `head`; a DINOHead dict: separate head
    loss=dict(
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
