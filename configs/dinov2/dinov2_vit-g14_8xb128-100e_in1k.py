# DINOv2 ViT-g/14 (SwiGLU FFN, 1.1B backbone parameters) on ImageNet-1k:
# the ViT-S/14 recipe, drop path 0.4 and activation checkpointing on.
_base_ = './dinov2_vit-s14_8xb128-100e_in1k.py'
model = dict(backbone=dict(arch='giant', drop_path_rate=0.4, with_cp=True))
