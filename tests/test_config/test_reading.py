"""mmssl.config.load_config: the one loader (read, merge, check keys)."""

import sys

import pytest
from mmengine.config import Config

from mmssl.config import (
    ConfigFileNotFoundError,
    UnknownConfigKeyError,
    load_config,
)
from mmssl.errors import TrainConfigError
from tests.support.tools import ROOT, tiny_config

SIMCLR = tiny_config('simclr_tiny')


def test_reads_and_merges_with_notes():
    notes = []
    cfg = load_config(
        SIMCLR,
        {'model.neck.hid_channels': 8, 'extra_key': 1},
        allow_new_keys=True,
        notes=notes,
    )
    assert cfg.model.neck.hid_channels == 8 and cfg.extra_key == 1
    assert notes == ['--cfg-options adds the new key `extra_key`.']


def test_a_loaded_config_is_merged_in_place():
    cfg = Config.fromfile(SIMCLR)
    assert load_config(cfg, {'model.neck.hid_channels': 8}) is cfg
    assert cfg.model.neck.hid_channels == 8


def test_bad_key_raises_and_leaves_nothing_half_merged():
    cfg = Config.fromfile(SIMCLR)
    before = cfg.to_dict()
    with pytest.raises(UnknownConfigKeyError, match='hid_channels'):
        load_config(cfg, {'model.neck.hid_chanels': 8, 'model.neck.x': 1})
    assert cfg.to_dict() == before


def test_missing_file_names_the_nearest_configs(monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(ConfigFileNotFoundError) as info:
        load_config('configs/simclr/simclr_resnet18-w16_1xb64-10e_dmo.py')
    assert isinstance(info.value, FileNotFoundError)
    assert str(info.value).startswith(
        'config file configs/simclr/simclr_resnet18-w16_1xb64-10e_dmo.py '
        'does not exist; did you mean '
        'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py'
    )


def test_exit_on_error_is_one_line_and_status_2(capsys, tmp_path):
    with pytest.raises(SystemExit) as info:
        load_config(SIMCLR, {'model.nek.x': 1}, exit_on_error=True)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and err.startswith('error: ')
    assert '`model.nek.x`' in err
    with pytest.raises(SystemExit) as info:
        load_config(str(tmp_path / 'none.py'), exit_on_error=True)
    assert info.value.code == 2
    assert 'none.py does not exist' in capsys.readouterr().err


def test_custom_imports_added_by_options_are_imported(tmp_path, monkeypatch):
    (tmp_path / 'toy_custom_mod.py').write_text('LOADED = True\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = load_config(
        SIMCLR,
        {'custom_imports': dict(imports=['toy_custom_mod'])},
    )
    assert cfg.custom_imports.imports == ['toy_custom_mod']
    assert sys.modules['toy_custom_mod'].LOADED


def test_config_that_does_not_parse_names_its_line(capsys, tmp_path):
    bad = tmp_path / 'broken.py'
    bad.write_text("model = dict(type='SimCLR'\nx = 1\n")
    with pytest.raises(TrainConfigError) as info:
        load_config(str(bad))
    message = str(info.value)
    assert 'broken.py' in message and 'not valid Python' in message
    assert 'line ' in message
    with pytest.raises(SystemExit) as info:
        load_config(str(bad), exit_on_error=True)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'not valid Python' in err
