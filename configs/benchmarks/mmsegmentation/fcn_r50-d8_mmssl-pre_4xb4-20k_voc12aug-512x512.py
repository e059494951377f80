# FCN on Pascal VOC 2012 aug with an mmssl-pretrained ResNet-50 (SimCLR,
# MoCo, BYOL, ...), the MMSelfSup segmentation benchmark. A config for
# mmsegmentation, not for mmssl (onedl-mmsegmentation; its caps accept
# mmcv 2.2):
#
#   python tools/model_converters/mmssl_to_mmseg.py \
#       work_dirs/mocov2_resnet50/epoch_200.pth pretrain/mmssl_r50.pth
#   python $MMSEG/tools/train.py THIS_CONFIG \
#       --cfg-options model.backbone.init_cfg.checkpoint=pretrain/mmssl_r50.pth
#
# The exported keys sit behind ``backbone.`` (stripped by ``prefix``). The
# plain-stem ``ResNet`` replaces mmseg's deep-stem ``ResNetV1c``, whose
# stem the pretrained network does not have; BN is trained (SyncBN).
_base_ = 'mmseg::fcn/fcn_r50-d8_4xb4-20k_voc12aug-512x512.py'

model = dict(
    pretrained=None,
    backbone=dict(
        type='ResNet',
        depth=50,
        norm_cfg=dict(type='SyncBN', requires_grad=True),
        norm_eval=False,
        init_cfg=dict(
            type='Pretrained',
            checkpoint='pretrain/mmssl_r50.pth',
            prefix='backbone.',
        ),
    ),
)
