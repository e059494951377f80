# Two-picture masked training data on the bundled demo digits
# (data/demo/train, made by tools/misc/make_demo_dataset.py), shared by the
# BEiT and CAE demos: a 32 px crop for the encoder, the same crop at 64 px
# for the target tokenizer, and a block-wise patch mask. The kNN evaluation
# on data/demo/val comes from demo_knn.py.
_base_ = ['./demo_train.py']

# the second image feeds the target network (DALL-E / VQ-KD / CLIP)
data_preprocessor = dict(
    # TwoNormDataPreprocessor that also handles the kNN's single images
    type='TwoNormOrSingleDataPreprocessor',
    mean=[33.0, 33.0, 33.0],
    std=[60.0, 60.0, 60.0],
    second_mean=[127.5, 127.5, 127.5],
    second_std=[127.5, 127.5, 127.5],
    to_rgb=True,
)

train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(
        type='RandomResizedCropAndInterpolationWithTwoPic',
        size=32,
        second_size=64,
        interpolation='bicubic',
        second_interpolation='bicubic',
        scale=(0.5, 1.0),
    ),
    dict(
        type='BEiTMaskGenerator',
        input_size=(8, 8),
        num_masking_patches=24,
        max_num_patches=None,
        min_num_patches=4,
    ),
    dict(type='PackInputs'),
]

train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
