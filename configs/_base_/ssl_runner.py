# What makes a config an mmssl run, in one place: mmssl's registered
# runner (mmssl/engine/runner/runner.py: CPU DDP, atomic saves with the
# loop state, save-on-signal, the work-dir lock; docs/en/distributed.md)
# and the guard of an unresolved config. mmssl.config.resolve
# (SSLRunner.from_cfg) turns the guard into mmengine's LogProcessor;
# mmengine's plain Runner.from_cfg stops at it at once, with a message
# naming build_runner, instead of failing in the model build.
# default_runtime.py inherits this file; the ImageNet configs built on an
# mmpretrain:: base list it beside that base (which sets neither key).
runner_type = 'SSLRunner'
log_processor = dict(type='UnresolvedLogProcessor')
