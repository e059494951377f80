"""mmssl registries.

Every registry mmengine defines has a child here. Where mmpretrain has a
child of its own, ours is a child of mmpretrain's, so a config with
``default_scope='mmssl'`` finds mmssl classes first, then mmpretrain's,
then mmengine's. A child registry does not import its parents' modules:
:func:`mmssl.setup_env.register_all_modules` does that.
"""

from mmengine.registry import FUNCTIONS as MMENGINE_FUNCTIONS
from mmengine.registry import INFERENCERS as MMENGINE_INFERENCERS
from mmengine.registry import STRATEGIES as MMENGINE_STRATEGIES
from mmengine.registry import Registry
from mmpretrain.registry import BATCH_AUGMENTS as MMPRETRAIN_BATCH_AUGMENTS
from mmpretrain.registry import DATA_SAMPLERS as MMPRETRAIN_DATA_SAMPLERS
from mmpretrain.registry import DATASETS as MMPRETRAIN_DATASETS
from mmpretrain.registry import EVALUATORS as MMPRETRAIN_EVALUATORS
from mmpretrain.registry import HOOKS as MMPRETRAIN_HOOKS
from mmpretrain.registry import LOG_PROCESSORS as MMPRETRAIN_LOG_PROCESSORS
from mmpretrain.registry import LOOPS as MMPRETRAIN_LOOPS
from mmpretrain.registry import METRICS as MMPRETRAIN_METRICS
from mmpretrain.registry import MODEL_WRAPPERS as MMPRETRAIN_MODEL_WRAPPERS
from mmpretrain.registry import MODELS as MMPRETRAIN_MODELS
from mmpretrain.registry import (
    OPTIM_WRAPPER_CONSTRUCTORS as MMPRETRAIN_OPTIM_WRAPPER_CONSTRUCTORS,
)
from mmpretrain.registry import OPTIM_WRAPPERS as MMPRETRAIN_OPTIM_WRAPPERS
from mmpretrain.registry import OPTIMIZERS as MMPRETRAIN_OPTIMIZERS
from mmpretrain.registry import PARAM_SCHEDULERS as MMPRETRAIN_PARAM_SCHEDULERS
from mmpretrain.registry import (
    RUNNER_CONSTRUCTORS as MMPRETRAIN_RUNNER_CONSTRUCTORS,
)
from mmpretrain.registry import RUNNERS as MMPRETRAIN_RUNNERS
from mmpretrain.registry import TASK_UTILS as MMPRETRAIN_TASK_UTILS
from mmpretrain.registry import TRANSFORMS as MMPRETRAIN_TRANSFORMS
from mmpretrain.registry import VISBACKENDS as MMPRETRAIN_VISBACKENDS
from mmpretrain.registry import VISUALIZERS as MMPRETRAIN_VISUALIZERS
from mmpretrain.registry import (
    WEIGHT_INITIALIZERS as MMPRETRAIN_WEIGHT_INITIALIZERS,
)

__all__ = [
    'RUNNERS',
    'RUNNER_CONSTRUCTORS',
    'LOOPS',
    'HOOKS',
    'LOG_PROCESSORS',
    'OPTIMIZERS',
    'OPTIM_WRAPPERS',
    'OPTIM_WRAPPER_CONSTRUCTORS',
    'PARAM_SCHEDULERS',
    'DATASETS',
    'DATA_SAMPLERS',
    'TRANSFORMS',
    'MODELS',
    'MODEL_WRAPPERS',
    'WEIGHT_INITIALIZERS',
    'BATCH_AUGMENTS',
    'TASK_UTILS',
    'METRICS',
    'EVALUATORS',
    'VISUALIZERS',
    'VISBACKENDS',
    'FUNCTIONS',
    'INFERENCERS',
    'STRATEGIES',
]

RUNNERS = Registry(
    'runner',
    parent=MMPRETRAIN_RUNNERS,
    locations=['mmssl.engine'],
)

RUNNER_CONSTRUCTORS = Registry(
    'runner constructor',
    parent=MMPRETRAIN_RUNNER_CONSTRUCTORS,
    locations=['mmssl.engine'],
)

LOOPS = Registry(
    'loop',
    parent=MMPRETRAIN_LOOPS,
    locations=['mmssl.engine', 'mmssl.evaluation'],
)

HOOKS = Registry(
    'hook',
    parent=MMPRETRAIN_HOOKS,
    locations=['mmssl.engine', 'mmssl.evaluation'],
)

LOG_PROCESSORS = Registry(
    'log processor',
    parent=MMPRETRAIN_LOG_PROCESSORS,
    locations=['mmssl.engine', 'mmssl.config'],
)

OPTIMIZERS = Registry(
    'optimizer',
    parent=MMPRETRAIN_OPTIMIZERS,
    locations=['mmssl.engine'],
)

OPTIM_WRAPPERS = Registry(
    'optim_wrapper',
    parent=MMPRETRAIN_OPTIM_WRAPPERS,
    locations=['mmssl.engine'],
)

OPTIM_WRAPPER_CONSTRUCTORS = Registry(
    'optimizer wrapper constructor',
    parent=MMPRETRAIN_OPTIM_WRAPPER_CONSTRUCTORS,
    locations=['mmssl.engine'],
)

PARAM_SCHEDULERS = Registry(
    'parameter scheduler',
    parent=MMPRETRAIN_PARAM_SCHEDULERS,
    locations=['mmssl.engine'],
)

DATASETS = Registry(
    'dataset',
    parent=MMPRETRAIN_DATASETS,
    locations=['mmssl.datasets'],
)

DATA_SAMPLERS = Registry(
    'data sampler',
    parent=MMPRETRAIN_DATA_SAMPLERS,
    locations=['mmssl.datasets'],
)

TRANSFORMS = Registry(
    'transform',
    parent=MMPRETRAIN_TRANSFORMS,
    locations=['mmssl.datasets'],
)


def _build_model(cfg, registry, default_args=None):
    """mmengine's model build, after filling ``'auto'`` neck/head sizes.

    ``MODELS.build(cfg.model)`` from Python then accepts the same configs
    as the runner. The filling is the function registered as
    ``resolve_model_sizes`` in :data:`FUNCTIONS`
    (:mod:`mmssl.config.derived_sizes`), found through the registry's
    locations like any registered object: this module imports nothing of
    mmssl, and mmssl.config imports it.
    """
    from mmengine.registry.build_functions import build_model_from_cfg

    if isinstance(cfg, dict):
        cfg = FUNCTIONS.get('resolve_model_sizes')(cfg)
    return build_model_from_cfg(cfg, registry, default_args)


MODELS = Registry(
    'model',
    parent=MMPRETRAIN_MODELS,
    locations=['mmssl.models'],
    build_func=_build_model,
)

MODEL_WRAPPERS = Registry(
    'model_wrapper',
    parent=MMPRETRAIN_MODEL_WRAPPERS,
    locations=['mmssl.models'],
)

WEIGHT_INITIALIZERS = Registry(
    'weight initializer',
    parent=MMPRETRAIN_WEIGHT_INITIALIZERS,
    locations=['mmssl.models'],
)

BATCH_AUGMENTS = Registry(
    'batch augment',
    parent=MMPRETRAIN_BATCH_AUGMENTS,
    locations=['mmssl.models'],
)

TASK_UTILS = Registry(
    'task util',
    parent=MMPRETRAIN_TASK_UTILS,
    locations=['mmssl.models'],
)

METRICS = Registry(
    'metric',
    parent=MMPRETRAIN_METRICS,
    locations=['mmssl.evaluation'],
)

EVALUATORS = Registry(
    'evaluator',
    parent=MMPRETRAIN_EVALUATORS,
    locations=['mmssl.evaluation'],
)

VISUALIZERS = Registry(
    'visualizer',
    parent=MMPRETRAIN_VISUALIZERS,
    locations=['mmssl.visualization'],
)

VISBACKENDS = Registry(
    'vis_backend',
    parent=MMPRETRAIN_VISBACKENDS,
    locations=['mmssl.visualization'],
)

FUNCTIONS = Registry(
    'function',
    parent=MMENGINE_FUNCTIONS,
    locations=['mmssl.config', 'mmssl.datasets'],
)

INFERENCERS = Registry(
    'inferencer',
    parent=MMENGINE_INFERENCERS,
    locations=['mmssl.apis'],
)

STRATEGIES = Registry(
    'strategy',
    parent=MMENGINE_STRATEGIES,
    locations=['mmssl.engine'],
)
