"""Registries: children of mmpretrain's, resolving all three scopes."""

import mmengine.registry as mmengine_registry
import mmpretrain.registry as mmpretrain_registry
import pytest

import mmssl.registry as mmssl_registry


def _registry_names(module) -> set:
    return {
        name
        for name, value in vars(module).items()
        if isinstance(value, mmengine_registry.Registry)
        and name.isupper()
        and not name.startswith(('MMENGINE_', 'MMPRETRAIN_'))
    }


def test_every_mmengine_registry_has_an_mmssl_child():
    ours = _registry_names(mmssl_registry)
    theirs = _registry_names(mmengine_registry)
    # mmengine calls it EVALUATOR, mmpretrain and mmssl EVALUATORS
    theirs = {'EVALUATORS' if n == 'EVALUATOR' else n for n in theirs}
    assert theirs <= ours, theirs - ours
    for name in ours:
        registry = getattr(mmssl_registry, name)
        assert registry.scope == 'mmssl'
        assert registry.parent is not None
        parent_scope = registry.parent.scope
        if hasattr(mmpretrain_registry, name):
            assert parent_scope == 'mmpretrain', name
        else:
            assert parent_scope == 'mmengine', name


@pytest.mark.parametrize(
    'registry, name, package',
    [
        ('MODELS', 'KNNDataset', None),
        ('MODELS', 'DINOVisionTransformer', 'mmssl'),
        ('MODELS', 'MoCoV3', 'mmpretrain'),
        ('MODELS', 'ResNet_CIFAR', 'mmpretrain'),
        ('DATASETS', 'KNNDataset', 'mmssl'),
        ('DATASETS', 'CustomDataset', 'mmpretrain'),
        ('HOOKS', 'CheckpointHook', 'mmengine'),
        ('HOOKS', 'AtomicCheckpointHook', 'mmssl'),
        ('LOOPS', 'FeatureTestLoop', 'mmssl'),
        ('METRICS', 'KNNAccuracy', 'mmssl'),
        ('OPTIM_WRAPPERS', 'AmpOptimWrapper', 'mmengine'),
        ('TRANSFORMS', 'PackInputs', 'mmpretrain'),
        ('TRANSFORMS', 'MultiCrop', 'mmssl'),
    ],
)
def test_default_scope_resolves_without_prefix(registry, name, package):
    cls = getattr(mmssl_registry, registry).get(name)
    if package is None:
        assert cls is None
    else:
        assert cls is not None, name
        assert cls.__module__.split('.')[0] == package
