# The hooks of the DINO-family (teacher-student) configs: the teacher's EMA
# momentum (TeacherEMAHook: momentum -> end_momentum over the run), the
# teacher temperature warm-up (warmup_temp -> temp over warmup_epochs, a
# run fraction), the frozen last layer of the head, and the skipped-file
# summary; the configs without a validation loop (the presets for one's
# own folders, *custom*.py, and the ImageNet recipes) also log RankMe, a
# label-free figure of the teacher's features (RankMeHook,
# docs/en/custom_dataset.md). One private key,
# ``_teacher_student_hooks`` (config -> hooks); a config lists this file
# among its bases and pops the key (mmengine takes a key from one base
# only):
#   custom_hooks = _base_.pop('_teacher_student_hooks')['dinov2']
# Names starting with two underscores stay inside this file (mmengine).


def __hooks(
    momentum,
    end_momentum,
    warmup_temp,
    temp,
    warmup_epochs,
    by_epoch=False,
    freeze_epochs=None,
    summary='first',
    extra=(),
    freeze_mode='zero_lr',
):
    temp_hook = dict(
        type='TeacherTempWarmupHook',
        warmup_temp=warmup_temp,
        temp=temp,
        warmup_epochs=warmup_epochs,
    )
    if by_epoch is not None:
        temp_hook['by_epoch'] = by_epoch
    hooks = [
        dict(
            type='TeacherEMAHook', momentum=momentum, end_momentum=end_momentum
        ),
        temp_hook,
    ]
    if freeze_epochs is not None:
        hooks.append(
            dict(
                type='FreezeLastLayerHook',
                freeze_epochs=freeze_epochs,
                mode=freeze_mode,
            )
        )
    summary_hook = [dict(type='BadFileSummaryHook', interval=50)]
    if summary == 'first':
        hooks = summary_hook + hooks
    elif summary == 'last':
        hooks = hooks + summary_hook
    return hooks + list(extra)


# reads head_iters/unfreeze/ramp_iters of model.warm_start
__warm_start = [dict(type='WarmStartHook')]
# RankMe of the teacher's features on 1024 training images, every epoch
# and before training (the random-init value)
__rank = [dict(type='RankMeHook')]

_teacher_student_hooks = dict(
    # DINO (ViT-S/16, also 5-channel): temperature warm-up 30 epochs of 100
    # (DINO v1 and iBOT drop the last layer's gradients while it is frozen,
    # dinov2 / dinov3 set its lr to 0: FreezeLastLayerHook's mode)
    dino_vit=__hooks(
        0.996,
        1.0,
        0.04,
        0.07,
        '30%',
        True,
        '1%',
        extra=__rank,
        freeze_mode='drop_grad',
    ),
    dino_resnet50=__hooks(
        0.996,
        1.0,
        0.04,
        0.07,
        '50%',
        True,
        '1%',
        extra=__rank,
        freeze_mode='drop_grad',
    ),
    # small-data presets (configs/_base_/schedules/small_data_200e.py)
    small_data=__hooks(
        0.9995,
        1.0,
        0.04,
        0.07,
        '15%',
        True,
        '0.5%',
        extra=__rank,
        freeze_mode='drop_grad',
    ),
    # DINOv2 (ViT-S/14, also 5-channel)
    dinov2=__hooks(0.992, 1.0, 0.04, 0.07, '30%', False, '1%', extra=__rank),
    dinov2_small_data=__hooks(
        0.992, 1.0, 0.04, 0.07, '15%', False, '0.5%', extra=__rank
    ),
    # a pretrained teacher: slower EMA than from scratch
    dinov2_warm_start=__hooks(
        0.996,
        1.0,
        0.04,
        0.07,
        '10%',
        False,
        '2%',
        extra=__warm_start + __rank,
    ),
    # DINOv3: constant teacher momentum 0.994 (no cosine to 1), as in the
    # reference dinov3_vit7b16_pretrain.yaml (schedules.momentum)
    dinov3=__hooks(0.994, 0.994, 0.04, 0.07, '30%', False, '1%', extra=__rank),
    dinov3_small_data=__hooks(
        0.994, 0.994, 0.04, 0.07, '15%', False, '0.5%', extra=__rank
    ),
    dinov3_warm_start=__hooks(
        0.994,
        0.994,
        0.04,
        0.07,
        '10%',
        False,
        '2%',
        extra=__warm_start + __rank,
    ),
    # Gram anchoring: the teacher is trained, so its final temperature from
    # the start
    dinov3_gram=__hooks(
        0.994,
        0.994,
        0.07,
        0.07,
        0,
        False,
        extra=[
            dict(
                type='GramTeacherHook',
                first_update=0,
                period=1000,
                max_updates=3,
            )
        ]
        + __rank,
    ),
    # CPU demos: a fixed temperature, a fast EMA
    dino_cnn_demo=__hooks(
        0.99, 1.0, 0.04, 0.04, 0, None, '25%', 'last', freeze_mode='drop_grad'
    ),
    dinov2_demo=__hooks(0.99, 1.0, 0.04, 0.04, 0, False, '10%', None),
    dinov2_5ch_demo=__hooks(0.99, 1.0, 0.04, 0.04, 0, False, '10%'),
    # the CPU preset (dinov2_vit-tiny-p14_1xb16-10e_custom-cpu.py): the
    # demo's fast EMA, a fixed, sharper teacher temperature (its header)
    dinov2_cpu=__hooks(0.99, 1.0, 0.02, 0.02, 0, False, '10%', extra=__rank),
    dinov3_demo=__hooks(
        0.99,
        0.99,
        0.04,
        0.04,
        0,
        False,
        '10%',
        None,
        extra=[
            dict(
                type='GramTeacherHook',
                first_update=110,
                period=55,
                max_updates=2,
            )
        ],
    ),
    dino3d_demo=__hooks(
        0.99, 1.0, 0.02, 0.02, 0, None, '5%', None, freeze_mode='drop_grad'
    ),
)
