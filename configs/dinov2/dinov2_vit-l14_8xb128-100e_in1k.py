# DINOv2 ViT-L/14 on ImageNet-1k: the ViT-S/14 recipe with a large backbone
# (drop path 0.3 as DINOv2's default config). Activation checkpointing
# saves memory at ~30% more compute: --cfg-options model.backbone.with_cp=True
_base_ = './dinov2_vit-s14_8xb128-100e_in1k.py'
model = dict(backbone=dict(arch='large', drop_path_rate=0.3))
