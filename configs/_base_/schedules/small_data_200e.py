# The small-data schedule of the DINO, iBOT and DINOv2 ViT-S presets
# (*_1xb64-200e_custom-small.py: one GPU x 64, 5k-50k images, 200
# epochs). The recipe's warm-ups keep their length in epochs: 10 (lr), 30
# (teacher temperature), 1 (frozen last layer) = 5%, 15% and 0.5% of the
# run; teacher momentum 0.9995 -> 1 (DINO's advice for small batches);
# a checkpoint every 5 epochs (2.5%). Why these values: the "Small-data
# preset: why these values" section of configs/dino/README.md.
# A preset inherits its ImageNet recipe and this file, and takes the
# entries below with `_base_.pop('_small_data_200e')`: mmengine allows a
# key in one base only, and the recipe already sets these.
_base_ = ['./dino_family_lr_wd.py', './teacher_student_hooks.py']

_small_data_200e = dict(
    train_dataloader=dict(
        batch_size=64, dataset=dict(data_root='data/custom')
    ),
    param_scheduler=_base_.pop('_dino_family_schedules')['small_data'],  # noqa: F821
    custom_hooks=_base_.pop('_teacher_student_hooks')['small_data'],  # noqa: F821
    train_cfg=dict(max_epochs=200),
    default_hooks=dict(checkpoint=dict(interval='2.5%')),
)
