# The CPU demos' schedule (and runtime): 4 epochs, lr warm-up over the
# first quarter, then cosine; kNN evaluation and one checkpoint at the end.
# Every length is a fraction of the run, resolved when the runner is built
# (docs/en/config.md), so `--cfg-options train_cfg.max_epochs=N` alone
# rescales them all.
_base_ = [
    '../default_runtime.py',
    './warmup_cosine/demo.py',
]

train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=4, val_interval='100%')
default_hooks = dict(
    logger=dict(interval=10),
    checkpoint=dict(interval='100%', max_keep_ckpts=1),
)
# what every demo shares: the optimizer wrapper (each names its optimizer),
# the lr's reference batch (one GPU x 64; a demo with another batch says
# so) and a fixed seed
optim_wrapper = dict(type='OptimWrapper')
auto_scale_lr = dict(base_batch_size=64)
randomness = dict(seed=0)
