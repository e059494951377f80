# The DINO / iBOT / DINOv2 schedule (and runtime) for ImageNet-1k: 100
# epochs; lr warm-up over the first 10% (10 epochs), then cosine to 1e-6;
# weight decay cosine from the optimizer's value to 10x it (0.04 -> 0.4);
# a checkpoint every 5%. The algorithm configs add the hooks (teacher
# temperature warm-up '30%', last layer frozen '1%'; TeacherEMAHook
# follows max_iters by itself).
# Every length is a fraction of the run, resolved when the runner is built
# (docs/en/config.md): `train_cfg.max_epochs=N` alone rescales them all.
_base_ = [
    '../default_runtime.py',
    './dino_family_lr_wd.py',
]

param_scheduler = _base_.pop('_dino_family_schedules')['imagenet']  # noqa: F821
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=100)
default_hooks = dict(checkpoint=dict(interval='5%', max_keep_ckpts=3))
