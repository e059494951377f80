# The multi-crop training pipelines (Caron et al. 2021) of the ImageNet-size
# DINO-family configs: 2 global crops at 224 px and N local crops at 96 px,
# the global scale range (s, 1) and the local one (0.05, s), optionally
# iBOT block masks per sample, and the metadata the algorithms read.
# custom_folder_multicrop.py's pipeline (DINOv2's, with per-sample masks)
# is a file of its own, multicrop_224px/dinov2_masked.py. The others are
# here, under one private key, ``_multicrop_224px`` (config -> pipeline),
# for configs whose other bases set train_pipeline (mmengine takes a key
# from one base only): such a config lists this file and pops the key:
#   train_pipeline = _base_.pop('_multicrop_224px')['dinov2']
# Names starting with two underscores stay inside this file (mmengine).


def __multicrop(num_local, scale, mask_patch_size=None, **crop):
    pipeline = [
        # max_side=None keeps full resolution; e.g. max_side=512 decodes
        # large JPEGs at 1/2-1/8 size, several times faster (see the docs).
        dict(type='LoadImageRobust', max_side=None),
        dict(
            type='MultiCrop',
            num_global_crops=2,
            num_local_crops=num_local,
            global_size=224,
            local_size=96,
            global_scale=(scale, 1.0),
            local_scale=(0.05, scale),
            **crop,
        ),
    ]
    if mask_patch_size is not None:
        pipeline.append(
            dict(
                type='BlockwiseMaskGenerator',
                patch_size=mask_patch_size,
                mask_ratio=(0.1, 0.5),
                mask_prob=0.5,
            )
        )
    meta_keys = ('sample_idx', 'img_path', 'num_global_crops', 'source')
    return pipeline + [dict(type='PackInputs', meta_keys=meta_keys)]


_multicrop_224px = dict(
    # DINO ViT-S/16: 10 local crops, scale split at 0.4
    dino=__multicrop(10, 0.4),
    # DINO ResNet-50: 6 local crops, split at 0.14
    dino_resnet50=__multicrop(6, 0.14),
    # iBOT: DINO's crops and per-sample block masks on 16 px patches
    ibot=__multicrop(10, 0.4, mask_patch_size=16),
    # DINOv2: 8 local crops, split at 0.32 (masks drawn per batch)
    dinov2=__multicrop(8, 0.32),
    # DINOv3: DINOv2's without the horizontal flip
    dinov3=__multicrop(8, 0.32, flip_prob=0.0),
    # Gram anchoring: also 448 px Gram-teacher copies of the global crops
    dinov3_gram=__multicrop(8, 0.32, flip_prob=0.0, gram_size=448),
)
