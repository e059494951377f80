# DINOv2 ViT-B/14 on ImageNet-1k: the ViT-S/14 recipe with a base backbone
# (the head input size follows the backbone: in_channels='auto').
_base_ = './dinov2_vit-s14_8xb128-100e_in1k.py'
model = dict(backbone=dict(arch='base', drop_path_rate=0.1))
