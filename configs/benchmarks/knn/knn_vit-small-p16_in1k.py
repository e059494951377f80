# Weighted kNN (k=20, T=0.07; Wu et al. 2018, as in DINO) of a frozen
# ViT-S/16 on ImageNet-1k: the train split is the feature bank, val the
# queries. Run with tools/test.py; point it at a checkpoint, e.g. for a
# teacher-student algorithm:
#   python tools/test.py configs/benchmarks/knn/knn_vit-small-p16_in1k.py CKPT
# tools/test.py loads CKPT's backbone itself (teacher first) and stops
# when it does not fit; the init_cfg below serves other runners (see
# configs/benchmarks/README.md for the prefixes).
_base_ = ['../../_base_/default_runtime.py']

data_root = 'data/imagenet'
_knn_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(
        type='ResizeEdge',
        scale=256,
        edge='short',
        backend='pillow',
        interpolation='bicubic',
    ),
    dict(type='CenterCrop', crop_size=224),
    dict(type='PackInputs'),
]
# the bank and the queries: one folder dataset, two splits
__split = dict(
    type='CustomDataset', data_root=data_root, pipeline=_knn_pipeline
)
test_dataloader = dict(
    batch_size=128,
    num_workers=8,
    persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=False),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type='KNNDataset',
        bank=dict(__split, data_prefix='train'),
        query=dict(__split, data_prefix='val'),
    ),
)
test_evaluator = dict(type='KNNAccuracy', k=20, temperature=0.07, topk=(1, 5))
test_cfg = dict(type='FeatureTestLoop')

# Features come from `model(x, mode='tensor')`: the backbone output, pooled
# to one vector per image (CLS token for ViTs, average for feature maps).
model = dict(
    type='ImageClassifier',
    data_preprocessor=dict(
        type='ClsDataPreprocessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        to_rgb=True,
    ),
    backbone=dict(
        type='VisionTransformer',
        arch='deit-small',
        img_size=224,
        patch_size=16,
        out_type='cls_token',
        init_cfg=dict(type='Pretrained', checkpoint='', prefix='backbone.'),
    ),
    neck=None,
    # no head: model(x, mode='tensor') then returns the backbone features
    head=None,
)

# mmengine loads `init_cfg` only when training; this hook applies it in
# test-only runs, after the checkpoint passed to tools/test.py.
custom_hooks = [dict(type='PretrainedInitHook')]
