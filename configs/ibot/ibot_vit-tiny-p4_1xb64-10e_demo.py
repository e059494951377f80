# iBOT (Zhou et al. 2022, https://arxiv.org/abs/2111.07832) on the bundled
# 32x32 demo digits (tools/misc/make_demo_dataset.py data/demo): the DINOv2
# demo's data, crops (2 x 32 + 4 x 16), block-wise masks and 10-epoch
# schedule with iBOT's losses (DINO CLS loss + masked-patch loss, shared
# head, EMA centring, no KoLeo). Small-data choices (see README.md): the
# 4-block, 64-wide ViT's Linear layers start Xavier-uniform instead of
# trunc-normal(0.02) (0.02 suits widths of 384+; at width 64 every block
# starts as a near-identity and the CLS output hardly depends on the image),
# and lr 5e-4. kNN top-1 on data/demo/val at the end.
#   python tools/train.py configs/ibot/ibot_vit-tiny-p4_1xb64-10e_demo.py
_base_ = '../dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py'

_n_prototypes = 256
model = dict(
    _delete_=True,
    type='iBOT',
    data_preprocessor={{_base_.data_preprocessor}},
    num_global_crops=2,
    backbone=dict(
        type='DINOVisionTransformer',
        arch=dict(
            embed_dims=64, num_layers=4, num_heads=4, feedforward_channels=256
        ),
        img_size=32,
        patch_size=4,
        layer_scale_init_value=0.0,
        drop_path_mode='static',  # fixed shapes, exact rate, no host sync
        out_type='raw',
        init_cfg=[dict(type='Xavier', layer='Linear', distribution='uniform')],
    ),
    head=dict(
        type='DINOHead',
        in_channels='auto',
        n_prototypes=_n_prototypes,
        hidden_channels=256,
        bottleneck_channels=64,
        norm_last_layer=False,
    ),
    patch_head=None,  # shared with the CLS head, as in iBOT's ViT-S recipe
    loss=dict(type='DINOLoss', out_dim=_n_prototypes, centering='centering'),
    ibot_loss=dict(
        type='iBOTPatchLoss', out_dim=_n_prototypes, centering='centering'
    ),
    loss_weights=dict(dino=1.0, ibot=1.0),
)
optim_wrapper = dict(optimizer=dict(lr=5e-4))
