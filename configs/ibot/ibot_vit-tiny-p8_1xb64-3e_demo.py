# iBOT on the bundled 32x32 demo digits (CPU): the DINOv2 demo's tiny ViT,
# data and schedule (batch 64, 3 epochs, 2 global crops); DINO +
# masked-patch losses with EMA centring, a shared head, no KoLeo.
#   python tools/train.py configs/ibot/ibot_vit-tiny-p8_1xb64-3e_demo.py
_base_ = '../dinov2/dinov2_vit-tiny-p8_1xb64-3e_demo.py'

n_prototypes = 256
model = dict(
    _delete_=True,
    type='iBOT',
    data_preprocessor=dict(
        type='SelfSupDataPreprocessor',
        mean=[33.0, 33.0, 33.0],
        std=[60.0, 60.0, 60.0],
        to_rgb=True,
    ),
    num_global_crops=2,
    backbone=dict(
        type='DINOVisionTransformer',
        arch=dict(
            embed_dims=64, num_layers=4, num_heads=4, feedforward_channels=256
        ),
        img_size=32,
        patch_size=8,
        layer_scale_init_value=0.0,
        out_type='raw',
    ),
    head=dict(
        type='DINOHead',
        in_channels=64,
        n_prototypes=n_prototypes,
        hidden_channels=256,
        bottleneck_channels=64,
        norm_last_layer=False,
    ),
    patch_head=None,
    loss=dict(type='DINOLoss', out_dim=n_prototypes, centering='centering'),
    ibot_loss=dict(
        type='iBOTPatchLoss', out_dim=n_prototypes, centering='centering'
    ),
    loss_weights=dict(dino=1.0, ibot=1.0),
)
