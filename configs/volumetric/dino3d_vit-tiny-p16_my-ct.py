# configs/volumetric/dino3d_vit-tiny-p16_my-ct.py
_base_ = './dino3d_vit-tiny-p8_1xb32-60e_demo.py'

train_dataloader = dict(
    batch_size=2,  # per GPU
    num_workers=4,
    dataset=dict(
        data_root='data/ct',
        ann_file='data/ct/dataset.json',  # or leave out: every file
        preprocess=[
            dict(type='LoadVolume'),
            dict(
                type='MONAITransform',
                transform='Orientationd',
                keys='img',
                axcodes='RAS',
            ),
            dict(
                type='MONAITransform',
                transform='Spacingd',
                keys='img',
                pixdim=(1.5, 1.5, 2.0),
                mode='bilinear',
            ),
            dict(
                type='MONAITransform',
                transform='ScaleIntensityRanged',
                keys='img',
                a_min=-175,
                a_max=250,
                b_min=0.0,
                b_max=1.0,
                clip=True,
            ),
        ],
        pipeline=[
            dict(
                type='MultiCrop3D',
                global_size=96,
                local_size=48,
                num_global=2,
                num_local=4,
            ),
            dict(type='PackInputs'),
        ],
        cache='disk',
        cache_dir='data/ct_cache',
    ),
)
# the DINO head (32 prototypes) is the demo's, chosen for its 200 volumes
# (configs/volumetric/README.md); a larger set may want more
model = dict(backbone=dict(img_size=96, patch_size=16))
# no labelled kNN set for your data: no validation
val_dataloader = None
val_cfg = None
val_evaluator = None
test_dataloader = None
test_cfg = None
test_evaluator = None
train_cfg = dict(max_epochs=100)
# the figure of a run without labels: RankMe of the teacher's features of
# (at most) 1024 of your volumes, each its centre 96^3 after the preprocess
# above, before training and after every epoch (docs/en/custom_dataset.md)
custom_hooks = _base_.custom_hooks + [dict(type='RankMeHook', batch_size=8)]
