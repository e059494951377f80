# Mask R-CNN R-50 FPN on COCO with an mmssl-pretrained ResNet-50, as
# MMSelfSup benchmarked detection: every stage trained (frozen_stages=-1)
# with SyncBN instead of frozen ImageNet statistics. A config for
# mmdetection, not for mmssl (pip install onedl-mmdetection; its caps
# accept mmcv 2.2):
#
#   python tools/model_converters/mmssl_to_mmseg.py \
#       work_dirs/mocov2_resnet50/epoch_200.pth pretrain/mmssl_r50.pth
#   python $MMDET/tools/train.py THIS_CONFIG \
#       --cfg-options model.backbone.init_cfg.checkpoint=pretrain/mmssl_r50.pth
#
# mmdetection has no plain ViT backbone in its core package, so a ViT is
# exported for mmsegmentation only (configs/benchmarks/mmsegmentation/).
_base_ = 'mmdet::mask_rcnn/mask-rcnn_r50_fpn_1x_coco.py'

norm_cfg = dict(type='SyncBN', requires_grad=True)
model = dict(
    backbone=dict(
        frozen_stages=-1,
        norm_cfg=norm_cfg,
        norm_eval=False,
        init_cfg=dict(
            type='Pretrained',
            checkpoint='pretrain/mmssl_r50.pth',
            prefix='backbone.',
        ),
    ),
    neck=dict(norm_cfg=norm_cfg),
    roi_head=dict(
        bbox_head=dict(
            type='Shared4Conv1FCBBoxHead',
            conv_out_channels=256,
            norm_cfg=norm_cfg,
        ),
        mask_head=dict(norm_cfg=norm_cfg),
    ),
)
