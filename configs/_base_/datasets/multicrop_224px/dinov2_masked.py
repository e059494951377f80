# Multi-crop training pipeline (Caron et al. 2021): 2 global crops at
# 224 px, local crops at 96 px, iBOT block masks per sample.
# The dinov2_masked recipe (custom_folder_multicrop.py).
# custom_folder_multicrop.py: DINOv2's, with per-sample masks
train_pipeline = [
    dict(
        type='LoadImageRobust',
        max_side=None,
    ),
    dict(
        type='MultiCrop',
        num_global_crops=2,
        num_local_crops=8,
        global_size=224,
        local_size=96,
        global_scale=(0.32, 1.0),
        local_scale=(0.05, 0.32),
    ),
    dict(
        type='BlockwiseMaskGenerator',
        patch_size=14,
        mask_ratio=(0.1, 0.5),
        mask_prob=0.5,
    ),
    dict(
        type='PackInputs',
        meta_keys=('sample_idx', 'img_path', 'num_global_crops', 'source'),
    ),
]
