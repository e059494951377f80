# The bundled shapes set (64 px, 10 classes; python
# tools/misc/make_shapes_dataset.py data/shapes) for the shapes siblings of
# the masked-image-modelling demos (*_shapes_demo.py of BEiT, BEiT v2, CAE,
# MAE, EVA, MILAN, MaskFeat, SimMIM): 64 px crops, shapes pixel statistics
# (mean ~ 70, std ~ 40 in every channel), kNN on data/shapes/val at 64 px.
# A sibling lists this file after its digits demo and takes the entries it
# needs from `__shapes = _base_.pop('_shapes_64px')`: mmengine takes a key
# from one base only, and the digits demo already sets these keys.
__size = 64  # crops; with 8 px patches the 8x8 token grid of the digits
__grid = 8
_shapes_64px = dict(
    train_data_root='data/shapes/train',
    val_dataloader=dict(
        dataset=dict(
            bank=dict(data_root='data/shapes'),
            query=dict(data_root='data/shapes'),
        )
    ),
    data_preprocessor=dict(mean=[70.0, 70.0, 70.0], std=[40.0, 40.0, 40.0]),
    # BEiT, BEiT v2, CAE: the tokenizer's picture is the same 64 px crop
    # (its 8x downsampling gives one code per patch); 24 of the 64 tokens
    # masked block-wise. No flips: RandomFlip does not take the pair.
    two_pic_pipeline=[
        dict(type='LoadImageFromFile'),
        dict(
            type='RandomResizedCropAndInterpolationWithTwoPic',
            size=__size,
            second_size=__size,
            interpolation='bicubic',
            second_interpolation='bicubic',
            scale=(0.5, 1.0),
        ),
        dict(
            type='BEiTMaskGenerator',
            input_size=(__grid, __grid),
            num_masking_patches=24,
            max_num_patches=None,
            min_num_patches=4,
        ),
        dict(type='PackInputs'),
    ],
    # MAE, EVA, MILAN, MaskFeat, SimMIM (the last two add their masks)
    crop_flip=[
        dict(type='LoadImageFromFile'),
        dict(
            type='RandomResizedCrop',
            scale=__size,
            crop_ratio_range=(0.5, 1.0),
            backend='cv2',
        ),
        dict(type='RandomFlip', prob=0.5),
    ],
)
