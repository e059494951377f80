# DINO ViT-S/16 (https://arxiv.org/abs/2104.14294): 65536 prototypes,
# head input size from the backbone (in_channels='auto'), centring.
model = dict(
    type='DINO',
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
        patch_size=16,
        layer_scale_init_value=0.0,  # DINO ViTs have no LayerScale
        drop_path_rate=0.1,
        drop_path_mode='static',  # fixed shapes, exact rate, no host sync
        out_type='cls_token',
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
    loss=dict(
        type='DINOLoss',
        out_dim=65536,
        student_temp=0.1,
        centering='centering',
        center_momentum=0.9,
    ),
)
