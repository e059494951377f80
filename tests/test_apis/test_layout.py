"""mmssl.apis is a real package; package ``__init__``s stay in their room."""

import importlib
import inspect

import pytest

import mmssl.registry as registry

ROOMS = [
    'mmssl.apis',
    'mmssl.checkpoint',
    'mmssl.datasets',
    'mmssl.engine',
    'mmssl.evaluation',
    'mmssl.launch',
    'mmssl.models',
    'mmssl.visualization',
]


def test_inferencers_location_is_mmssl_apis_and_imports():
    assert registry.INFERENCERS._locations == ['mmssl.apis']
    for name in registry.__all__:
        for location in getattr(registry, name)._locations:
            importlib.import_module(location)  # ModuleNotFoundError: fail


@pytest.mark.parametrize('room', ROOMS)
def test_init_exports_only_its_own_functions(room):
    package = importlib.import_module(room)
    foreign = [
        name
        for name in getattr(package, '__all__', [])
        if (
            inspect.isfunction(obj := getattr(package, name))
            or inspect.isclass(obj)
        )
        and not obj.__module__.startswith(room + '.')
        and obj.__module__ != room
    ]
    assert not foreign, f'{room} re-exports {foreign}'


def test_public_api():
    from mmssl import apis

    for name in (
        'prepare_train_cfg',
        'train',
        'init_model',
        'publish_checkpoint',
        'count_params',
    ):
        assert callable(getattr(apis, name))
