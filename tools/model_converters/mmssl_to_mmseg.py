# Copyright (c) mmssl contributors. All rights reserved.
"""Export an mmssl backbone to mmsegmentation / mmdetection.

A ViT (DINO/iBOT/DINOv2 ``DINOVisionTransformer`` without registers, or
an mmpretrain ``VisionTransformer`` such as MAE's) becomes the weights of
mmsegmentation's ``VisionTransformer`` (bare keys under ``state_dict``,
for ``model.pretrained``); LayerScale is folded into the linear layers. A
BEiT (BEiT, BEiT v2, CAE: relative positions, q/v biases) becomes the
weights of mmsegmentation's ``BEiT`` (the shared relative-position table
copied into every block). A
ResNet keeps its names behind ``backbone.``, for
``init_cfg=dict(type='Pretrained', checkpoint=DST, prefix='backbone.')``
in mmdetection or mmsegmentation. Any key missing from, or foreign to, the
target layout stops the export. Configs: configs/benchmarks/
mmsegmentation/ and configs/benchmarks/mmdetection/; docs/en/
checkpoints.md ("Export to mmsegmentation/mmdetection").

SRC is read with mmssl's safe loader (docs/en/checkpoints.md); pass
``--trusted`` only for files you trust.

Example::

    python tools/model_converters/mmssl_to_mmseg.py \\
        work_dirs/dino_vit-s16/epoch_100.pth dino_vit-s16_mmseg.pth
"""

from typing import List, Optional

from mmssl.checkpoint.cli import convert_main
from mmssl.checkpoint.export_mmseg import convert_for_mmseg, mmseg_marker

ARCH_OPTION = (
    '--arch',
    dict(
        choices=['auto', 'vit', 'beit', 'resnet'],
        default='auto',
        help='backbone kind in SRC (default: found from the keys)',
    ),
)


def main(argv: Optional[List[str]] = None) -> dict:
    return convert_main(
        argv,
        doc=__doc__,
        dst_help='output checkpoint for mmsegmentation/mmdetection (.pth)',
        src_prefix_help='backbone prefix in SRC (default: auto-detect, '
        'teacher preferred)',
        marker=mmseg_marker,
        convert=convert_for_mmseg,
        options=[ARCH_OPTION],
        src_prefix_at=1,
    )


if __name__ == '__main__':
    main()
