# Linear probe of the demo ViT-tiny on the bundled 64 px shapes set
# (data/shapes): as linear_vit-tiny-p4_1xb64-5e_demo.py, with 8 px patches
# on 64 px images (the same 64 tokens; the encoder of
# configs/mae/mae_vit-tiny-p8_1xb64-40e_shapes_demo.py).
#   python tools/train.py \
#       configs/benchmarks/linear_probe/linear_vit-tiny-p8_1xb64-5e_shapes.py \
#       --cfg-options model.backbone.init_cfg.checkpoint=CKPT
_base_ = ['./linear_vit-tiny-p4_1xb64-5e_demo.py']

_linear_data_root = 'data/shapes'
train_dataloader = dict(dataset=dict(data_root=_linear_data_root))
val_dataloader = dict(dataset=dict(data_root=_linear_data_root))
test_dataloader = val_dataloader
# pixel statistics of data/shapes (all channels): mean ~ 70, std ~ 40
model = dict(
    data_preprocessor=dict(mean=[70.0, 70.0, 70.0], std=[40.0, 40.0, 40.0]),
    backbone=dict(img_size=64, patch_size=8),
)
