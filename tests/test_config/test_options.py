"""Strict --cfg-options: value parsing, key checking, merging, lr scaling."""

import argparse
import math

import pytest
import torch
from mmengine.config import Config, DictAction

from mmssl.config.options import (
    UnknownConfigKeyError,
    check_cfg_option_key,
    merge_cfg_options,
    substituted_variable_warnings,
)
from mmssl.config.rewrite import (
    auto_scale_lr_in_cfg,
    enable_amp_in_cfg,
    lr_scale_factor,
)
from mmssl.config.values import CfgOptionsAction, parse_cfg_value

DEMO = 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py'


@pytest.mark.parametrize(
    'text, expected',
    [
        ('1', 1),
        ('-3', -3),
        ('0.1', 0.1),
        ('1e-3', 1e-3),
        ('None', None),
        ('none', None),
        ('True', True),
        ('false', False),
        ('[1, 2]', [1, 2]),
        ('(1, 2)', (1, 2)),
        ('(1,)', (1,)),
        ('[(1, 2), (3, 4)]', [(1, 2), (3, 4)]),
        ('((1, (2, 3)), 4)', ((1, (2, 3)), 4)),
        ('[a, b]', ['a', 'b']),
        ('a,b', ['a', 'b']),
        ('[a, (1, b)]', ['a', (1, 'b')]),
        ('[None, True, x]', [None, True, 'x']),
        ("{'a': 1}", {'a': 1}),
        ("dict(type='BN', eps=1e-5)", {'type': 'BN', 'eps': 1e-5}),
        (
            "[dict(type='A'), dict(type='B', k=2)]",
            [{'type': 'A'}, {'type': 'B', 'k': 2}],
        ),
        ('resnet', 'resnet'),
        ('my dir/with space', 'my dir/with space'),
        ("'1'", '1'),
        ("'a,b'", 'a,b'),
        ('data/demo', 'data/demo'),
        ('', ''),
    ],
)
def test_parse_cfg_value(text, expected):
    value = parse_cfg_value(text)
    assert value == expected
    assert type(value) is type(expected)


def test_parse_fixes_dictaction_gaps():
    # mmengine's DictAction removes spaces and cannot keep '1' a string
    assert DictAction._parse_iterable('my dir') == 'mydir'
    assert parse_cfg_value('my dir') == 'my dir'
    assert DictAction._parse_iterable("'1'") == 1
    assert parse_cfg_value("'1'") == '1'


def test_cfg_options_action():
    parser = argparse.ArgumentParser()
    parser.add_argument('--cfg-options', nargs='+', action=CfgOptionsAction)
    args = parser.parse_args(
        ['--cfg-options', 'a.b=1', 'c=[x, 2]', 'd=None', 'e=k=v']
    )
    assert args.cfg_options == {'a.b': 1, 'c': ['x', 2], 'd': None, 'e': 'k=v'}
    with pytest.raises(SystemExit):
        parser.parse_args(['--cfg-options', 'novalue'])


@pytest.fixture()
def demo_cfg():
    return Config.fromfile(DEMO)


def test_unknown_key_names_key_and_suggestions(demo_cfg):
    with pytest.raises(UnknownConfigKeyError) as info:
        merge_cfg_options(demo_cfg, {'model.backbone.depthh': 34})
    msg = str(info.value)
    assert 'model.backbone.depthh' in msg
    assert '`model.backbone.depth`' in msg
    assert '--allow-new-keys' in msg
    # nothing changed
    assert 'depthh' not in demo_cfg.model.backbone
    with pytest.raises(UnknownConfigKeyError, match='train_dataloder'):
        merge_cfg_options(demo_cfg, {'train_dataloder.batch_size': 2})
    with pytest.raises(UnknownConfigKeyError, match='`train_dataloader`'):
        merge_cfg_options(demo_cfg, {'train_dataloder.batch_size': 2})


def test_no_change_when_one_key_is_bad(demo_cfg):
    with pytest.raises(UnknownConfigKeyError):
        merge_cfg_options(
            demo_cfg,
            {'train_dataloader.batch_size': 2, 'model.neck.out_channel': 8},
        )
    assert demo_cfg.train_dataloader.batch_size == 64


def test_allow_new_keys(demo_cfg):
    notes = merge_cfg_options(
        demo_cfg, {'model.backbone.archh': 'x'}, allow_new_keys=True
    )
    assert demo_cfg.model.backbone.archh == 'x'
    assert any('model.backbone.archh' in n for n in notes)


def test_class_arguments_are_accepted(demo_cfg):
    # `indices` is an argument of CustomDataset (via BaseDataset) although
    # the config does not set it; `max_keep_ckpts` exists already.
    notes = merge_cfg_options(
        demo_cfg,
        {
            'train_dataloader.dataset.indices': 8,
            'default_hooks.checkpoint.save_best': 'auto',
        },
    )
    assert demo_cfg.train_dataloader.dataset.indices == 8
    assert demo_cfg.default_hooks.checkpoint.save_best == 'auto'
    assert len(notes) == 2
    # but not a key the loop class does not take
    with pytest.raises(UnknownConfigKeyError, match='max_epochs'):
        merge_cfg_options(demo_cfg, {'train_cfg.max_epoch': 2})


def test_runner_keys_and_values(demo_cfg):
    merge_cfg_options(
        demo_cfg,
        {
            'work_dir': '/tmp/x',
            'auto_scale_lr.enable': True,
            'randomness.deterministic': True,
            'val_cfg': None,
            'model.backbone.zero_init_residual': False,
        },
    )
    assert demo_cfg.work_dir == '/tmp/x'
    assert demo_cfg.auto_scale_lr == dict(base_batch_size=64, enable=True)
    assert demo_cfg.randomness == dict(seed=0, deterministic=True)
    assert demo_cfg.val_cfg is None
    assert demo_cfg.model.backbone.zero_init_residual is False


def test_list_indices(demo_cfg):
    merge_cfg_options(
        demo_cfg,
        {
            'param_scheduler.1.end': 5,
            'param_scheduler.-1.T_max': 4,
            'train_pipeline.1.num_views': 4,
            'val_evaluator.topk.0': 2,
        },
    )
    assert demo_cfg.param_scheduler[1]['end'] == 5
    assert demo_cfg.param_scheduler[1]['T_max'] == 4
    assert demo_cfg.train_pipeline[1]['num_views'] == 4
    # a scalar inside a tuple (mmengine's merge cannot do this)
    assert demo_cfg.val_evaluator.topk == (2, 5)
    with pytest.raises(IndexError, match='has 2 items'):
        merge_cfg_options(demo_cfg, {'param_scheduler.2.end': 1})
    with pytest.raises(UnknownConfigKeyError, match='is a list'):
        merge_cfg_options(demo_cfg, {'param_scheduler.first.end': 1})


def test_descending_into_a_scalar(demo_cfg):
    with pytest.raises(TypeError, match='not a dict'):
        merge_cfg_options(demo_cfg, {'load_from.path': 'x'})


def test_dict_values_merge_and_delete(demo_cfg):
    merge_cfg_options(demo_cfg, {'model.neck': {'out_channels': 32}})
    assert demo_cfg.model.neck.out_channels == 32
    assert demo_cfg.model.neck.type == 'NonLinearNeck'
    merge_cfg_options(
        demo_cfg, {'model.head.loss': {'_delete_': True, 'type': 'Other'}}
    )
    assert demo_cfg.model.head.loss == {'type': 'Other'}


def test_check_key_with_custom_resolver():
    cfg = {'model': {'type': 'Foo', 'a': 1}}

    class Foo:
        def __init__(self, a, b=2, **kwargs):
            pass

    assert check_cfg_option_key(cfg, 'model.a') is None
    assert 'argument of Foo' in check_cfg_option_key(
        cfg, 'model.b', type_resolver=lambda t: [Foo]
    )
    with pytest.raises(UnknownConfigKeyError, match='`model.b`'):
        check_cfg_option_key(cfg, 'model.bb', type_resolver=lambda t: [Foo])


def test_substituted_variable_warning(demo_cfg):
    warnings = substituted_variable_warnings(
        demo_cfg._cfg_dict, {'_knn_data_root': '/data/x'}
    )
    assert len(warnings) == 1
    assert 'val_dataloader.dataset.bank.data_root' in warnings[0]
    # overriding the copies too silences those paths
    warnings = substituted_variable_warnings(
        demo_cfg._cfg_dict,
        {
            '_knn_data_root': '/data/x',
            'val_dataloader.dataset.bank.data_root': '/data/x',
        },
    )
    assert 'val_dataloader.dataset.bank.data_root' not in warnings[0]
    assert 'val_dataloader.dataset.query.data_root' in warnings[0]


@pytest.mark.parametrize(
    'real, base, rule, factor',
    [
        (256, 64, 'linear', 4.0),
        (16, 64, 'linear', 0.25),
        (256, 1024, 'sqrt', 0.5),
        (4096, 1024, 'sqrt', 2.0),
    ],
)
def test_lr_scale_factor(real, base, rule, factor):
    assert math.isclose(lr_scale_factor(real, base, rule), factor)


def test_lr_scale_factor_errors():
    with pytest.raises(ValueError, match='cubic'):
        lr_scale_factor(2, 1, 'cubic')
    with pytest.raises(ValueError, match='positive'):
        lr_scale_factor(2, 0, 'linear')


def test_auto_scale_lr_in_cfg(demo_cfg):
    demo_cfg.param_scheduler[1]['eta_min'] = 0.001
    lines = auto_scale_lr_in_cfg(demo_cfg, world_size=4, rule='sqrt')
    # real 4 x 64 = 256, base 64 -> sqrt(4) = 2
    assert math.isclose(demo_cfg.optim_wrapper.optimizer.lr, 0.2)
    assert math.isclose(demo_cfg.param_scheduler[1]['eta_min'], 0.002)
    assert demo_cfg.auto_scale_lr.enable is False
    text = '\n'.join(lines)
    assert 'rule=sqrt' in text and '256' in text and '0.1 -> 0.2' in text
    del demo_cfg.auto_scale_lr['base_batch_size']
    with pytest.raises(ValueError, match='base_batch_size'):
        auto_scale_lr_in_cfg(demo_cfg, 1)


def test_enable_amp_in_cfg(demo_cfg):
    note = enable_amp_in_cfg(demo_cfg, cuda_available=False)
    assert demo_cfg.optim_wrapper.type == 'CPUAmpOptimWrapper'
    assert 'bfloat16' in note
    cfg = Config.fromfile(DEMO)
    enable_amp_in_cfg(cfg, cuda_available=True)
    assert cfg.optim_wrapper.type == 'AmpOptimWrapper'
    assert cfg.optim_wrapper.loss_scale == 'dynamic'


@pytest.mark.parametrize(
    'cuda, expected',
    [(False, 'NaNGuardCPUAmpOptimWrapper'), (True, 'NaNGuardAmpOptimWrapper')],
)
def test_enable_amp_keeps_the_nan_guard(cuda, expected):
    cfg = Config(
        dict(
            optim_wrapper=dict(
                type='NaNGuardOptimWrapper', max_consecutive_skips=3
            )
        )
    )
    enable_amp_in_cfg(cfg, cuda_available=cuda)
    assert cfg.optim_wrapper.type == expected
    assert cfg.optim_wrapper.max_consecutive_skips == 3


@pytest.mark.parametrize('current', ['OptimWrapper', 'AmpOptimWrapper'])
def test_amp_wrapper_from_an_mmpretrain_base_is_found(current):
    """A dict inherited from an ``mmpretrain::`` base carries
    ``_scope_='mmpretrain'``; mmssl's CPU wrapper is not in that
    registry, so the scope becomes mmssl's."""
    from mmssl.registry import OPTIM_WRAPPERS

    cfg = Config(dict(optim_wrapper=dict(type=current)))
    cfg.optim_wrapper['_scope_'] = 'mmpretrain'
    enable_amp_in_cfg(cfg, cuda_available=False)
    wrapper = cfg.optim_wrapper
    assert wrapper.type == 'CPUAmpOptimWrapper'
    with OPTIM_WRAPPERS.switch_scope_and_registry(wrapper._scope_) as reg:
        assert reg.get(wrapper.type).__name__ == 'CPUAmpOptimWrapper'


def test_enable_amp_gpu_wrapper_falls_back_to_cpu_guard():
    cfg = Config(
        dict(
            optim_wrapper=dict(
                type='NaNGuardAmpOptimWrapper', loss_scale='dynamic'
            )
        )
    )
    note = enable_amp_in_cfg(cfg, cuda_available=False)
    assert cfg.optim_wrapper.type == 'NaNGuardCPUAmpOptimWrapper'
    assert 'loss_scale' not in cfg.optim_wrapper
    assert 'NaNGuardCPUAmpOptimWrapper' in note


def test_enable_amp_rejects_unknown_wrapper():
    cfg = Config(dict(optim_wrapper=dict(type='MyWrapper')))
    with pytest.raises(ValueError, match="'MyWrapper'"):
        enable_amp_in_cfg(cfg, cuda_available=False)


def test_nan_guard_cpu_amp_wrapper_skips_nan_step():
    from mmssl.registry import OPTIM_WRAPPERS

    model = torch.nn.Linear(2, 1)
    wrapper = OPTIM_WRAPPERS.build(
        dict(
            type='NaNGuardCPUAmpOptimWrapper',
            optimizer=torch.optim.SGD(model.parameters(), lr=1.0),
        )
    )
    before = model.weight.detach().clone()
    with wrapper.optim_context(model):
        loss = model(torch.ones(1, 2)).sum() * float('nan')
    wrapper.update_params(loss)
    assert torch.equal(model.weight, before)
    with wrapper.optim_context(model):
        out = model(torch.ones(1, 2))
        assert out.dtype == torch.bfloat16
    wrapper.update_params(out.float().sum())
    assert not torch.equal(model.weight, before)
