# The demo ViT-tiny as a digit classifier, for the linear probe and the
# fine-tuning demos: the encoder of the MAE, EVA, MILAN, MaskFeat, BEiT and
# CAE demos (4 blocks, 96 dims, 3 heads, 4 px patches on 32 px images), its
# CLS token into a linear head over the 10 digit classes, the demo digits'
# pixel statistics. Each benchmark adds how the weights load and learn.
_num_classes = 10
model = dict(
    type='ImageClassifier',
    data_preprocessor=dict(
        type='ClsDataPreprocessor',
        num_classes=_num_classes,
        mean=[33.0, 33.0, 33.0],
        std=[60.0, 60.0, 60.0],
        to_rgb=True,
    ),
    backbone=dict(
        type='VisionTransformer',
        arch=dict(
            embed_dims=96, num_layers=4, num_heads=3, feedforward_channels=384
        ),
        img_size=32,
        patch_size=4,
        out_type='cls_token',
    ),
    neck=None,
    head=dict(
        type='LinearClsHead',
        num_classes=_num_classes,
        in_channels='auto',  # the backbone's width: 96
        loss=dict(type='CrossEntropyLoss'),
    ),
)
