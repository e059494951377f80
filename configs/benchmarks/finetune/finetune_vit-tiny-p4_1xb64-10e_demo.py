# End-to-end fine-tuning of the demo ViT-tiny (4 blocks, 96 dims, 4 px
# patches: the encoder of the MAE, EVA, MILAN, MaskFeat, BEiT and CAE
# demos) as an mmpretrain ImageClassifier on the bundled digits
# (data/demo, tools/misc/make_demo_dataset.py). Every weight learns, with
# layer-wise lr decay (each block below the top gets 0.75x the lr of the
# one above; Bao et al., 2022, BEiT; He et al., 2022, MAE), AdamW, drop
# path, label smoothing, a 1-epoch warm-up and a cosine decay. About a
# minute on a CPU:
#   python tools/train.py \
#       configs/benchmarks/finetune/finetune_vit-tiny-p4_1xb64-10e_demo.py \
#       --cfg-options \
#       model.init_cfg.checkpoint=work_dirs/mae_demo/epoch_4.pth
# The checkpoint's backbone.* keys load into the classifier's backbone
# (model.init_cfg.prefix=teacher. for the DINO family's teacher) and the
# load report is logged; fewer than 90 % of the classifier's tensors
# loaded (all but the head's 2) stops the run (min_match). Random-init
# baseline: model.init_cfg=None. 10 % of the labels:
# train_dataloader.dataset.fraction=0.1 (a LabelSubset, stratified).
_base_ = [
    '../../_base_/datasets/demo_linear.py',
    '../../_base_/default_runtime.py',
    '../../_base_/schedules/finetune_layer_decay.py',
    '../../_base_/schedules/warmup_cosine/finetune_demo.py',
    '../../_base_/models/vit-tiny-p4_digits_cls.py',
]

train_dataloader = dict(
    dataset=dict(
        _delete_=True,
        type='LabelSubset',  # fraction=None: every training label
        dataset=dict(
            type='CustomDataset',
            data_root='data/demo',
            data_prefix='train',
            pipeline=[
                dict(type='LoadImageFromFile'),
                dict(type='RandomFlip', prob=0.5),
                dict(type='PackInputs'),
            ],
        ),
        fraction=None,
        seed=0,
    ),
)
model = dict(
    # the whole classifier from the checkpoint's 'backbone.*' keys (the
    # head stays fresh); on the classifier, not the backbone, so that the
    # backbone's own init (mmpretrain re-draws pos_embed) runs first
    init_cfg=dict(
        type='PretrainedStrip',
        checkpoint='',
        strip_prefixes=('module.',),
        min_match=0.9,
    ),
    backbone=dict(drop_path_rate=0.1),
    head=dict(
        loss=dict(type='LabelSmoothLoss', label_smooth_val=0.1),
        init_cfg=dict(type='TruncNormal', layer='Linear', std=2e-5),
    ),
)

optim_wrapper = dict(optimizer=dict(lr=1e-3))
_max_epochs = 10  # the schedule and intervals below are run fractions
train_cfg = dict(
    type='EpochBasedTrainLoop',
    max_epochs=_max_epochs,
    val_interval='50%',
)
auto_scale_lr = dict(base_batch_size=64)
default_hooks = dict(
    logger=dict(interval=10),
    checkpoint=dict(type='CheckpointHook', interval='100%'),
)
randomness = dict(seed=0)
