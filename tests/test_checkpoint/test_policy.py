"""The trust policy: what loads, what is refused, and the opt-ins.

Every refusal loads a checkpoint whose unpickling would create a marker
file; each test asserts the error and that the marker does not exist.
"""

import os
import pickle
from collections import OrderedDict

import numpy as np
import pytest
import torch
from mmengine.logging import HistoryBuffer
from mmengine.runner.checkpoint import _load_checkpoint

from mmssl.checkpoint import (
    TRUST_ENV,
    UnsafeCheckpointError,
    add_safe_checkpoint_globals,
    checkpoint_trusted,
    load_checkpoint,
    loading_policy,
    set_checkpoint_trust,
    torch_load_safe,
    trusted_checkpoints,
)
from mmssl.checkpoint.policy import _builtin_safe_globals, _extra_globals

from .payload import TEST_SCHEME, save_payload_checkpoint


def _assert_refused(err, marker, what='posix.system'):
    msg = str(err.value)
    assert what in msg
    assert f'{TRUST_ENV}=1' in msg and 'trusted=True' in msg
    assert not os.path.exists(marker), 'the payload ran'


def _mmengine_like_checkpoint() -> dict:
    """Numpy scalars and arrays in runtime_info, as hooks store them."""
    buf = HistoryBuffer()
    buf.update(1.5)
    buf.update(2.5)
    return {
        'meta': {'epoch': 1, 'iter': 4, 'cfg': 'x = 1', 'seed': 0},
        'state_dict': OrderedDict(w=torch.arange(3.0)),
        'message_hub': {
            'log_scalars': {'train/loss': buf},
            'runtime_info': {
                'eta': np.float64(0.5),
                'arr': np.arange(3, dtype=np.int32),
            },
        },
    }


def test_real_mmengine_checkpoint_loads_without_opt_in(mmengine_checkpoint):
    # Negative control: torch's own weights-only load refuses the file.
    with pytest.raises(pickle.UnpicklingError, match='HistoryBuffer'):
        torch.load(mmengine_checkpoint, weights_only=True)
    for load in (load_checkpoint, torch_load_safe):
        ckpt = load(mmengine_checkpoint)
        assert ckpt['meta']['iter'] == 2
        loss = ckpt['message_hub']['log_scalars']['train/loss']
        assert isinstance(loss, HistoryBuffer)
        history, _ = loss.data  # numpy arrays inside the buffer
        assert len(history) == 2 and isinstance(history, np.ndarray)
        assert loss.mean() == pytest.approx(float(history.mean()))
        assert 'backbone.register_tokens' in ckpt['state_dict']


def test_numpy_and_history_buffer_values_round_trip(tmp_path):
    path = str(tmp_path / 'ok.pth')
    torch.save(_mmengine_like_checkpoint(), path)
    ckpt = load_checkpoint(path)
    buf = ckpt['message_hub']['log_scalars']['train/loss']
    assert buf.mean() == pytest.approx(2.0) and buf.current() == 2.5
    info = ckpt['message_hub']['runtime_info']
    assert info['eta'] == 0.5 and isinstance(info['eta'], np.floating)
    np.testing.assert_array_equal(info['arr'], [0, 1, 2])
    assert info['arr'].dtype == np.int32


@pytest.mark.parametrize(
    'load',
    [
        load_checkpoint,
        torch_load_safe,
        lambda p: torch_load_safe(open(p, 'rb')),
        lambda p: load_checkpoint(p, trusted=False),
    ],
    ids=['load_checkpoint', 'torch_load_safe', 'file_object', 'explicit'],
)
def test_local_payload_refused(tmp_path, load):
    marker = tmp_path / 'pwned'
    path = save_payload_checkpoint(tmp_path / 'evil.pth', marker)
    with pytest.raises(UnsafeCheckpointError) as err:
        load(path)
    _assert_refused(err, marker)


def test_policy_forces_weights_only_on_callers(tmp_path):
    """mmengine or torch.hub code asking for weights_only=False is
    overruled inside the scope."""
    marker = tmp_path / 'pwned'
    path = save_payload_checkpoint(tmp_path / 'evil.pth', marker)
    with pytest.raises(UnsafeCheckpointError) as err:
        with loading_policy(source=path):
            torch.load(path, weights_only=False)
    _assert_refused(err, marker)
    assert 'TORCH_FORCE_WEIGHTS_ONLY_LOAD' not in os.environ  # restored
    with pytest.raises(UnsafeCheckpointError) as err:
        with loading_policy(source=path):
            _load_checkpoint(path, map_location='cpu')
    _assert_refused(err, marker)


def test_registered_non_local_scheme_refused(tmp_path, unsafe_scheme):
    """A scheme whose loader unpickles fully is still refused."""
    marker = tmp_path / 'pwned'
    path = save_payload_checkpoint(tmp_path / 'evil.pth', marker)
    with pytest.raises(UnsafeCheckpointError) as err:
        load_checkpoint(TEST_SCHEME + path)
    _assert_refused(err, marker)
    assert unsafe_scheme.calls == [TEST_SCHEME + path]  # went through it
    # the opt-in lets the same scheme run the payload
    load_checkpoint(TEST_SCHEME + path, trusted=True)
    assert marker.exists()


def test_local_unsafe_loader_refused(tmp_path, unsafe_local_scheme):
    """Without mmengine's or torch's own defaults, the policy alone."""
    marker = tmp_path / 'pwned'
    path = save_payload_checkpoint(tmp_path / 'evil.pth', marker)
    with pytest.raises(UnsafeCheckpointError) as err:
        load_checkpoint(path)
    _assert_refused(err, marker)
    assert unsafe_local_scheme.calls == [path]


def _trust_call(path):
    return load_checkpoint(path, trusted=True)


def _trust_env(path):
    os.environ[TRUST_ENV] = '1'
    return load_checkpoint(path)


def _trust_context(path):
    with trusted_checkpoints():
        return torch_load_safe(path)


def _trust_process(path):
    set_checkpoint_trust(True)
    return load_checkpoint(path)


def _trust_outer_scope(path):
    """A trusted scope (the runner's) trusts the loads nested in it."""
    with loading_policy(trusted=True):
        return torch_load_safe(path)


@pytest.mark.parametrize(
    'opt_in',
    [
        _trust_call,
        _trust_env,
        _trust_context,
        _trust_process,
        _trust_outer_scope,
    ],
)
def test_opt_in_runs_the_payload(
    tmp_path, opt_in, unsafe_local_scheme, monkeypatch
):
    monkeypatch.setenv(TRUST_ENV, '0')  # restored after _trust_env
    marker = tmp_path / 'pwned'
    path = save_payload_checkpoint(tmp_path / 'evil.pth', marker)
    with pytest.raises(UnsafeCheckpointError):
        load_checkpoint(path)
    assert not marker.exists()
    ckpt = opt_in(path)
    assert marker.exists()  # the file was trusted and fully unpickled
    assert torch.equal(ckpt['state_dict']['w'], torch.arange(3.0))


class _Gadget:
    """Pickles as ``func(*args)``; callable only so pickle accepts it."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args

    def __call__(self, *args):  # pragma: no cover - never called
        raise AssertionError


def test_getattr_only_serves_history_buffer_methods(tmp_path):
    """``getattr`` is allowed for HistoryBuffer methods; a gadget chain
    through it (function -> __globals__ -> builtins -> exec) is refused."""
    marker = tmp_path / 'pwned'
    method = _Gadget(getattr, HistoryBuffer, 'update')  # allowed
    globs = _Gadget(getattr, method, '__globals__')
    get = _Gadget(getattr, globs, 'get')
    builtins = _Gadget(get, '__builtins__')
    exec_ = _Gadget(_Gadget(getattr, builtins, 'get'), 'exec')
    payload = _Gadget(exec_, f'open({str(marker)!r}, "w").close()')
    path = str(tmp_path / 'gadget.pth')
    torch.save({'x': payload}, path)
    with pytest.raises(UnsafeCheckpointError, match='not allowed') as err:
        load_checkpoint(path)
    assert "'__globals__'" in str(err.value)
    assert not marker.exists()
    load_checkpoint(path, trusted=True)
    assert marker.exists()  # the chain is a real payload


class _Custom:
    """A type a hook might store; unpickling it creates the marker."""

    def __init__(self, marker=None):
        self.marker = marker

    def __setstate__(self, state):
        self.__dict__.update(state)
        open(self.marker, 'w').close()


def test_add_safe_checkpoint_globals(tmp_path):
    marker = str(tmp_path / 'made')
    path = str(tmp_path / 'custom.pth')
    torch.save({'obj': _Custom(marker)}, path)
    with pytest.raises(UnsafeCheckpointError) as err:
        load_checkpoint(path)
    _assert_refused(err, marker, what='_Custom')
    add_safe_checkpoint_globals([_Custom])
    try:
        assert load_checkpoint(path)['obj'].marker == marker
    finally:
        _extra_globals.remove(_Custom)
    assert os.path.exists(marker)  # allowlisted types are unpickled


def test_legacy_format_and_numpy1_names_load(tmp_path):
    """Files from torch's legacy writer (protocol 2, ``__builtin__``) and
    from numpy 1.x (``numpy.core.multiarray``) load."""
    _builtin_safe_globals.cache_clear()  # built in this test, not cached
    path = tmp_path / 'old.pth'
    torch.save(
        _mmengine_like_checkpoint(), path, _use_new_zipfile_serialization=False
    )
    data = path.read_bytes()  # protocol 2: GLOBAL 'module\nname\n'
    assert b'c__builtin__\ngetattr\n' in data
    assert data.count(b'numpy._core.multiarray\n') == 2  # array, scalar
    path.write_bytes(
        data.replace(b'numpy._core.multiarray\n', b'numpy.core.multiarray\n')
    )
    ckpt = load_checkpoint(str(path))
    assert ckpt['message_hub']['log_scalars']['train/loss'].mean() == 2.0
    info = ckpt['message_hub']['runtime_info']
    assert info['eta'] == 0.5
    np.testing.assert_array_equal(info['arr'], [0, 1, 2])


@pytest.mark.parametrize(
    'obj, name',
    [
        (HistoryBuffer, '__init__'),  # dunder
        (HistoryBuffer, '_set_default_statistics'),  # private
        (HistoryBuffer, 'data'),  # a property, not a method
        (OrderedDict, 'update'),  # a method name of HistoryBuffer's
    ],
)
def test_getattr_refuses_private_non_methods_and_other_types(
    tmp_path, obj, name
):
    path = str(tmp_path / 'g.pth')
    torch.save({'x': _Gadget(getattr, obj, name)}, path)
    with pytest.raises(UnsafeCheckpointError, match='is not allowed in a'):
        load_checkpoint(path)


def _refusal(source: str, what: str, said: str) -> str:
    """The whole refusal message, spelled out."""
    return (
        f'Refusing to load checkpoint {source}: it pickles {what}, which '
        'mmssl does not allow in checkpoints because unpickling it could '
        'run arbitrary code. If you trust this file, opt in explicitly: set '
        'the environment variable MMSSL_TRUST_CHECKPOINT=1, add '
        '`trust_checkpoint = True` to the config (or --cfg-options '
        'trust_checkpoint=True), or call mmssl.checkpoint.load_checkpoint('
        'path, trusted=True). To allow only this type, call '
        'mmssl.checkpoint.add_safe_checkpoint_globals([...]). (torch said: '
        f'{said})'
    )


@pytest.mark.parametrize(
    'text, what, said',
    [
        (  # torch < 2.6 style: the reason follows the marker
            'Weights only load failed.\nWeightsUnpickler error: Unsupported'
            ' global: GLOBAL a.b was not allowed\n\nSee the docs.',
            'a.b',
            'Unsupported global: GLOBAL a.b was not allowed',
        ),
        ('weights_only: GLOBAL a.b, GLOBAL c.d', 'a.b, c.d', None),
        (  # nothing after the marker: the first line of the error
            'weights_only failed\nWeightsUnpickler error:  \n',
            'weights_only failed',
            'weights_only failed',
        ),
        (  # the first marker's reason, not the last
            'weights_only\nWeightsUnpickler error: A\n'
            'WeightsUnpickler error: B',
            'A',
            'A',
        ),
    ],
)
def test_refusal_message_names_types_and_opt_ins(text, what, said):
    said = said or text
    with pytest.raises(UnsafeCheckpointError) as err:
        with loading_policy(source='run/epoch_3.pth'):
            raise pickle.UnpicklingError(text)
    assert str(err.value) == _refusal('run/epoch_3.pth', what, said)
    assert err.value.source == 'run/epoch_3.pth'
    assert err.value.refused == what
    with pytest.raises(UnsafeCheckpointError) as err:
        with loading_policy():
            raise pickle.UnpicklingError(text)
    assert err.value.source == '<checkpoint>'
    assert str(err.value).startswith('Refusing to load checkpoint <checkp')


@pytest.mark.parametrize(
    'text',
    [
        'weights_only load failed',
        'Unsupported global: x',
        'GLOBAL a.b',
        'x is not in the allowlist',
        'cannot reduce x',
    ],
)
def test_each_weights_only_wording_becomes_a_refusal(text):
    with pytest.raises(UnsafeCheckpointError) as err:
        with loading_policy(source='s'):
            raise pickle.UnpicklingError(text)
    assert f'(torch said: {text})' in str(err.value)


def test_other_errors_pass_through_unchanged():
    for err in (
        pickle.UnpicklingError('invalid load key, x'),  # a corrupt file
        UnsafeCheckpointError('GLOBAL a.b refused', source='inner'),
    ):
        with pytest.raises(pickle.UnpicklingError) as got:
            with loading_policy(source='outer'):
                raise err
        assert got.value is err


@pytest.mark.parametrize(
    'value, trusted',
    [
        ('1', True),
        (' Yes ', True),
        ('TRUE', True),
        ('on', True),
        ('0', False),
        ('no', False),
        ('', False),
    ],
)
def test_trust_variable_values(monkeypatch, value, trusted):
    monkeypatch.setenv(TRUST_ENV, value)
    assert checkpoint_trusted() is trusted


def test_trust_scopes_nest_and_restore():
    assert not checkpoint_trusted()
    with trusted_checkpoints():
        with trusted_checkpoints(False):
            assert not checkpoint_trusted()
        assert checkpoint_trusted()
    assert not checkpoint_trusted()


def test_policy_overrides_and_restores_torch_force_variables(
    tmp_path, monkeypatch
):
    """A user's TORCH_FORCE_* setting neither breaks the opt-in nor
    lets a payload through, and is back after each load."""
    marker = tmp_path / 'pwned'
    path = save_payload_checkpoint(tmp_path / 'evil.pth', marker)
    force, no_force = (
        'TORCH_FORCE_WEIGHTS_ONLY_LOAD',
        'TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD',
    )
    monkeypatch.setenv(force, '1')
    monkeypatch.delenv(no_force, raising=False)
    load_checkpoint(path, trusted=True)
    assert marker.exists()
    assert os.environ[force] == '1' and no_force not in os.environ
    marker.unlink()
    monkeypatch.delenv(force)
    monkeypatch.setenv(no_force, '1')
    with pytest.raises(UnsafeCheckpointError):
        load_checkpoint(path)
    assert not marker.exists()
    assert os.environ[no_force] == '1' and force not in os.environ
