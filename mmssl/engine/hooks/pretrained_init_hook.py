"""Apply ``init_cfg=dict(type='Pretrained')`` in test-only runs."""

import logging

from mmengine.hooks import Hook
from mmengine.logging import print_log
from torch import nn

from mmssl.checkpoint.pretrained import overwritten_after_load
from mmssl.registry import HOOKS


def _is_pretrained(init_cfg) -> bool:
    cfgs = init_cfg if isinstance(init_cfg, (list, tuple)) else [init_cfg]
    return any(
        isinstance(c, dict) and c.get('type') == 'Pretrained' for c in cfgs
    )


def pretrained_modules(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """Top-most submodules whose ``init_cfg`` is of type ``Pretrained``."""
    found: list[tuple[str, nn.Module]] = []
    for name, module in model.named_modules():
        if any(name.startswith(f + '.') or f == '' for f, _ in found):
            continue
        if _is_pretrained(getattr(module, 'init_cfg', None)):
            found.append((name, module))
    return found


@HOOKS.register_module()
class PretrainedInitHook(Hook):
    """Load ``Pretrained`` init configs before testing.

    mmengine initialises weights (and thus loads ``init_cfg=dict(
    type='Pretrained', checkpoint=..., prefix=...)``) only in
    ``runner.train()``. For evaluation-only runs such as the kNN benchmark
    (``tools/test.py``), this hook calls ``init_weights()`` of every module
    that has such an ``init_cfg`` (e.g. ``model.backbone``), after the
    runner's own ``load_from`` checkpoint, so the backbone weights come from
    the ``init_cfg`` checkpoint and prefix. Modules without a
    ``Pretrained`` init config are left alone.
    """

    priority = 'VERY_HIGH'

    def before_run(self, runner) -> None:
        """Fail early, with the fix, when no checkpoint was given."""
        model = getattr(runner.model, 'module', runner.model)
        for name, module in pretrained_modules(model):
            cfgs = (
                module.init_cfg
                if isinstance(module.init_cfg, (list, tuple))
                else [module.init_cfg]
            )
            for cfg in cfgs:
                if cfg.get('type') == 'Pretrained' and not cfg.get(
                    'checkpoint'
                ):
                    raise ValueError(
                        f'"{name}" has init_cfg type Pretrained without a '
                        'checkpoint. Pass one, e.g. --cfg-options '
                        f'model.{name}.init_cfg.checkpoint=PATH.pth '
                        f'model.{name}.init_cfg.prefix=backbone. (see '
                        'configs/benchmarks/README.md).'
                    )

    def before_test(self, runner) -> None:
        model = getattr(runner.model, 'module', runner.model)
        for name, module in pretrained_modules(model):
            cfg = module.init_cfg
            module._is_init = False
            module.init_weights()
            print_log(
                f'PretrainedInitHook: initialised "{name}" from {cfg}',
                logger='current',
            )
            for line in overwritten_after_load(module):
                print_log(line, logger='current', level=logging.WARNING)
