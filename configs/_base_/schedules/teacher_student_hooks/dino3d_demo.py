# Teacher-student hooks: the teacher EMA momentum (TeacherEMAHook), the
# teacher temperature warm-up, the frozen last layer of the head
# (FreezeLastLayerHook) and the skipped-file summary; lengths are run
# fractions (docs/en/config.md).
# The dino3d_demo recipe (dino3d_vit-tiny-p8_1xb32-60e_demo.py).
custom_hooks = [
    dict(
        type='TeacherEMAHook',
        momentum=0.99,
        end_momentum=1.0,
    ),
    dict(
        type='TeacherTempWarmupHook',
        warmup_temp=0.02,
        temp=0.02,
        warmup_epochs=0,
    ),
    dict(
        type='FreezeLastLayerHook',
        freeze_epochs='5%',
        mode='drop_grad',
    ),
]
