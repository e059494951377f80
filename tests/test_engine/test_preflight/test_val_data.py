"""Validation follows the data; the dry run's memory lines; the summary."""

from mmengine.config import Config

from mmssl.engine.hooks.run_summary_hook import data_roots, describe_val_data
from mmssl.engine.preflight.step_memory import GIB, step_memory_lines
from mmssl.engine.preflight.val_data import check_val_data, val_data_warning


def _knn(root):
    return dict(
        dataset=dict(
            type='KNNDataset',
            bank=dict(
                type='CustomDataset', data_root=root, data_prefix='train'
            ),
            query=dict(
                type='CustomDataset', data_root=root, data_prefix='val'
            ),
        )
    )


def _cfg(train_root, val_root='data/demo', val=True):
    return Config(
        dict(
            train_dataloader=dict(
                dataset=dict(type='ImageFolderDataset', data_root=train_root)
            ),
            val_dataloader=_knn(val_root) if val else None,
            val_cfg=dict(type='FeatureValLoop') if val else None,
        )
    )


def test_one_warning_when_training_leaves_the_demo_but_validation_not():
    warning = val_data_warning(_cfg('/data/my_images'))
    assert 'bundled demo data (data/demo/train, data/demo/val)' in warning
    assert 'not on your images (/data/my_images)' in warning
    assert 'class sub-folders' in warning and 'val_cfg=None' in warning
    assert val_data_warning(_cfg('data/demo/train')) is None
    assert val_data_warning(_cfg('/data/a', val_root='/data/held_out')) is None
    assert val_data_warning(_cfg('/data/a', val=False)) is None
    # a list of roots, one of them the user's
    assert val_data_warning(_cfg(['data/demo/train', '/data/b'])) is not None


def test_missing_validation_folders_are_refused_before_training(tmp_path):
    import pytest

    from mmssl.errors import TrainConfigError, UserError

    (tmp_path / 'train').mkdir()
    (tmp_path / 'val').mkdir()
    check_val_data(_cfg('/x', val_root=str(tmp_path)))  # both exist
    with pytest.raises(TrainConfigError) as info:
        check_val_data(_cfg('/x', val_root=str(tmp_path / 'nope')))
    assert isinstance(info.value, UserError) and info.value.exit_code == 2
    assert f'{tmp_path}/nope/train, {tmp_path}/nope/val' in str(info.value)
    with pytest.raises(TrainConfigError, match='make_demo_dataset.py'):
        check_val_data(_cfg('/x', val_root='data/demo/no_such_split'))


def test_data_roots_and_the_summary_names_of_the_val_data():
    cfg = _cfg('/data/a', val_root='/v')
    assert data_roots(cfg.val_dataloader.dataset) == ['/v/train', '/v/val']
    assert describe_val_data(cfg) == 'bank /v/train, queries /v/val'
    nested = dict(
        type='ConcatDataset', datasets=[dict(data_root=['/a', '/b'])]
    )
    assert data_roots(nested) == ['/a', '/b']


def test_memory_lines_warn_with_the_two_knobs():
    result = dict(
        device='cpu',
        batch=64,
        peak=int(26.7 * GIB),
        points={2: 2 * GIB, 4: int(2.7 * GIB)},
        workers=int(1.6 * GIB),
        available=int(22.4 * GIB),
        extrapolated=True,
    )
    first, warning = step_memory_lines(result)
    assert first.startswith(
        'peak memory of one training step at batch 64: about 26.70 GiB '
        '(measured 2.00 GiB at batch 2, 2.70 GiB at batch 4, extended to '
        'batch 64; dataloader workers 1.60 GiB)'
    )
    assert 'more than the 22.40 GiB' in warning
    assert 'train_dataloader.batch_size, now 64' in warning
    assert 'model.backbone.arch' in warning and 'num_local_crops' in warning
    result['available'] = 30 * GIB
    assert len(step_memory_lines(result)) == 1
    result.update(device='cuda', available=None)
    assert step_memory_lines(result)[0].startswith('peak GPU memory')
