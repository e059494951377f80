# Teacher-student hooks: the teacher EMA momentum (TeacherEMAHook), the
# teacher temperature warm-up, the frozen last layer of the head
# (FreezeLastLayerHook) and the skipped-file summary; lengths are run
# fractions (docs/en/config.md).
# The dinov2_demo recipe (dinov2_vit-tiny-p4_1xb64-10e_demo.py).
custom_hooks = [
    dict(
        type='TeacherEMAHook',
        momentum=0.99,
        end_momentum=1.0,
    ),
    dict(
        type='TeacherTempWarmupHook',
        warmup_temp=0.04,
        temp=0.04,
        warmup_epochs=0,
        by_epoch=False,
    ),
    dict(
        type='FreezeLastLayerHook',
        freeze_epochs='10%',
        mode='zero_lr',
    ),
]
