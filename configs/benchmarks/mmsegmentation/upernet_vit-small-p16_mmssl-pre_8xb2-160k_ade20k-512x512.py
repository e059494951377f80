# UperNet on ADE20K with an mmssl-pretrained ViT-S/16 (DINO, iBOT,
# DINOv2 at patch 16 without registers, MAE ViT-S ...). A config for
# mmsegmentation, not for mmssl: run it with mmseg's tools/train.py on the
# maintained onedl stack (pip install onedl-mmsegmentation; its caps accept
# mmcv 2.2), after exporting the backbone:
#
#   python tools/model_converters/mmssl_to_mmseg.py \
#       work_dirs/dino_vit-s16/epoch_100.pth pretrain/mmssl_vit-s16.pth
#   python $MMSEG/tools/train.py THIS_CONFIG \
#       --cfg-options model.pretrained=pretrain/mmssl_vit-s16.pth
#
# The exporter prints the backbone options the file needs; the ones set
# here are those of a DINOVisionTransformer ViT-S/16 (patch bias, final
# norm, LayerNorm eps 1e-6, GELU MLP ratio 4). mmseg resizes the 14x14
# position embedding to the 32x32 grid of the 512 px crops at load.
_base_ = 'mmseg::vit/vit_deit-s16-ln_mln_upernet_8xb2-160k_ade20k-512x512.py'

model = dict(
    pretrained='pretrain/mmssl_vit-s16.pth',
    backbone=dict(
        embed_dims=384,
        num_heads=6,
        patch_size=16,
        mlp_ratio=4,
        patch_bias=True,
        final_norm=True,
        drop_path_rate=0.1,
    ),
)
