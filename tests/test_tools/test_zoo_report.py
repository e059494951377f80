""".dev_scripts/zoo_report.py: measures demos, writes the table."""

import json
import os
import os.path as osp
import shutil

import pytest

from tests.support.tools import load_dev_script, load_tool

zoo = load_dev_script('zoo_report.py')
MAE = 'configs/mae/mae_vit-tiny-p4_1xb64-4e_demo.py'


def _tiny_digits(src: str, dst: str, per_class: dict) -> str:
    """Copy the first few images per class of each split."""
    for split, n in per_class.items():
        for cls in sorted(os.listdir(osp.join(src, split))):
            os.makedirs(osp.join(dst, split, cls))
            for name in sorted(os.listdir(osp.join(src, split, cls)))[:n]:
                shutil.copy(
                    osp.join(src, split, cls, name),
                    osp.join(dst, split, cls, name),
                )
    return dst


def test_default_demos_are_the_image_demos():
    """Every 2D image demo once; no shapes or dense variant; no 3D or
    5-channel demo (they read their own sets, so their rows could never
    fill)."""
    configs = zoo.default_configs()
    assert MAE in configs
    assert 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py' in configs
    assert not [c for c in configs if '_shapes_demo' in c]
    assert not [c for c in configs if '_dense_demo' in c]  # dense_zoo.py
    folders = {c.split('/')[1] for c in configs}
    assert not folders & {'volumetric', 'multichannel'}, folders
    assert len(configs) == len(set(configs)) >= 28


def test_probe_and_shapes_variant_are_chosen_by_backbone():
    assert zoo.probe_config(MAE, 'digits').endswith(
        'linear_vit-tiny-p4_1xb64-5e_demo.py'
    )
    simclr = 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py'
    assert zoo.probe_config(simclr, 'shapes').endswith(
        'linear_resnet18-w16_1xb64-5e_shapes.py'
    )
    dinov2 = 'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py'
    assert zoo.probe_config(dinov2, 'digits') is None
    shapes = zoo.resolve(MAE, 'shapes')
    assert shapes == {
        'config': 'configs/mae/mae_vit-tiny-p8_1xb64-40e_shapes_demo.py',
        'options': [],
    }
    # no 64 px variant: the digits recipe, every folder moved to data/shapes
    barlow = 'configs/barlowtwins/barlowtwins_resnet18-w16_1xb64-4e_demo.py'
    options = zoo.resolve(barlow, 'shapes')['options']
    assert 'train_dataloader.dataset.data_root=data/shapes/train' in options
    assert 'test_dataloader.dataset.query.data_root=data/shapes' in options


@pytest.mark.parametrize(
    'digits, shapes',
    [
        (
            'eva/eva-mae-style_vit-tiny-p4_1xb64-4e_demo.py',
            'eva/eva-mae-style_vit-tiny-p8_1xb64-40e_shapes_demo.py',
        ),
        (
            'milan/milan_vit-tiny-p4_1xb64-4e_demo.py',
            'milan/milan_vit-tiny-p8_1xb64-40e_shapes_demo.py',
        ),
        (
            'cae/cae_vit-tiny-p4_1xb64-4e_demo.py',
            'cae/cae_vit-tiny-p8_1xb64-16e_shapes_demo.py',
        ),
        (
            'maskfeat/maskfeat_vit-tiny-p4_1xb64-4e_demo.py',
            'maskfeat/maskfeat_vit-tiny-p8_1xb64-40e_shapes_demo.py',
        ),
        (
            'simmim/simmim_swin-tiny-w4_1xb64-16e_demo.py',
            'simmim/simmim_swin-tiny-w4-p8_1xb64-40e_shapes_demo.py',
        ),
    ],
)
def test_mim_shapes_rows_train_their_shapes_sibling(digits, shapes):
    """The shapes row of each MIM demo trains its 64 px / 8 px sibling
    (the only ``<stem>_*_shapes_demo.py`` in its folder), not the 32 px
    digits recipe on the shapes folders."""
    assert zoo.resolve(f'configs/{digits}', 'shapes') == {
        'config': f'configs/{shapes}',
        'options': [],
    }


@pytest.mark.parametrize('algo', ['npid', 'odc', 'deepcluster'])
def test_memory_bank_resized_for_the_folder(algo, demo_data_root, tmp_path):
    """The NPID, ODC and DeepCluster demos size a buffer for the 1438
    digits; run on another folder, the row passes that folder's count
    (here 3 images a class, 30), else training stops at the first index
    past 1438 (the 3000-image shapes set did)."""
    root = _tiny_digits(demo_data_root, str(tmp_path / 'd'), {'train': 3})
    config = glob_one(f'configs/{algo}/{algo}_*_demo.py')
    options = zoo.resolve(config, 'digits', data_root=root)['options']
    assert options[-1] == 'model.num_samples=30', options
    assert f'train_dataloader.dataset.data_root={root}/train' in options
    barlow = 'configs/barlowtwins/barlowtwins_resnet18-w16_1xb64-4e_demo.py'
    other = zoo.resolve(barlow, 'digits', data_root=root)['options']
    assert not [o for o in other if 'num_samples' in o], other
    assert zoo.resolve(config, 'digits') == {'config': config, 'options': []}


def glob_one(pattern: str) -> str:
    import glob

    (found,) = glob.glob(osp.join(zoo.ROOT, pattern))
    return osp.relpath(found, zoo.ROOT)


def test_table_replaces_only_its_section(tmp_path):
    doc = tmp_path / 'zoo.md'
    doc.write_text(
        'intro\n<!-- zoo-table:digits -->\nold\n<!-- /zoo-table:digits -->\n'
        'outro\n'
    )
    zoo.write_table(str(doc), 'digits', 'new')
    assert doc.read_text() == (
        'intro\n<!-- zoo-table:digits -->\nnew\n<!-- /zoo-table:digits -->\n'
        'outro\n'
    )
    zoo.write_table(str(doc), 'shapes', 'other')  # no markers yet: appended
    assert doc.read_text().endswith(
        '\n<!-- zoo-table:shapes -->\nother\n<!-- /zoo-table:shapes -->\n'
    )


@pytest.mark.slow
def test_end_to_end_on_one_tiny_demo(demo_data_root, tmp_path, capsys):
    data = _tiny_digits(
        demo_data_root, str(tmp_path / 'data'), {'train': 10, 'val': 4}
    )
    doc = tmp_path / 'zoo.md'
    doc.write_text(
        'before\n<!-- zoo-table:digits -->\n<!-- /zoo-table:digits -->\n'
    )
    argv = [MAE, '--max-iters', '2', '--data-root', data]
    argv += ['--work-root', str(tmp_path / 'w'), '--doc', str(doc)]
    argv += ['--timeout', '300']
    zoo.main(argv)
    results = json.loads((tmp_path / 'zoo.json').read_text())
    row = results['digits'][MAE]
    assert row['status'] == 'done'
    assert row['checkpoint'].endswith('iter_2.pth')
    assert row['train_s'] > 0
    # the figure is what knn_eval.py gives on the same checkpoint
    knn_eval = load_tool('misc/knn_eval.py')
    metrics = knn_eval.main(
        [MAE, '--checkpoint', row['checkpoint'], '--cfg-options']
        + zoo.data_options(data)
    )
    assert row['trained_knn']['knn/top1'] == round(metrics['knn/top1'], 2)
    text = doc.read_text()
    line = next(s for s in text.splitlines() if f'`{MAE}`' in s)
    cells = [c.strip() for c in line.strip('|').split('|')]
    assert cells[1] == '2'
    assert cells[2] == f'{row["random_knn"]["knn/top1"]:.2f}'
    assert cells[3] == '-'  # a ViT: no BatchNorm baseline
    assert row['bnrecal_knn'] is None
    assert cells[4] == f'{row["trained_knn"]["knn/top1"]:.2f}'
    assert cells[9] == f'`{row["command"]}`'
    assert 'not measured yet' in text  # the other demos
    # resumable: a second call measures nothing and keeps the row
    capsys.readouterr()
    zoo.main(argv)
    assert 'measured already' in capsys.readouterr().out
    again = json.loads((tmp_path / 'zoo.json').read_text())
    assert again['digits'][MAE] == row


def test_table_cells_and_unmeasured_rows():
    row = {
        'status': 'done',
        'settings': {'max_iters': None},
        'random_knn': {'knn/top1': 11.0},
        'trained_knn': {'knn/top1': 22.0},
        'random_linear': {'accuracy/top1': 33.0},
        'trained_linear': None,
        'train_s': 44.4,
        'command': 'python x',
    }
    text = zoo.table({MAE: row}, [MAE, 'configs/a/a_demo.py'])
    lines = text.splitlines()
    unmeasured = '| `configs/a/a_demo.py` | not measured yet |'
    assert lines[2] == unmeasured + ' |' * 8
    # measured before the BatchNorm baselines existed (old JSON): '-'
    assert lines[3] == (
        f'| `{MAE}` | full schedule | 11.00 | - | 22.00 | 33.00 | - | - | '
        '44 | `python x` |'
    )
    row['bnrecal_knn'] = {'knn/top1': 5.5}
    row['bnrecal_linear'] = {'accuracy/top1': 6.5}
    line = zoo.table({MAE: row}, [MAE]).splitlines()[2]
    assert line.startswith(
        f'| `{MAE}` | full schedule | 11.00 | 5.50 | 22.00 | 33.00 | 6.50 '
        '| - |'
    )


def test_batchnorm_baseline_only_where_the_backbone_has_batchnorm():
    assert zoo.has_batchnorm('configs/byol/byol_resnet18-w16_1xb64-4e_demo.py')
    assert zoo.has_batchnorm(
        'configs/spark/spark_sparse-resnet18_1xb64-4e_demo.py'
    )
    assert not zoo.has_batchnorm(MAE)


MIXMIM = 'configs/mixmim/mixmim_mixmim-tiny_1xb64-4e_demo.py'


def _fake_tools(monkeypatch, tmp_path):
    """Stub the subprocesses: return fixed metrics, record each command."""
    calls = []

    def fake_run(cmd, log, timeout):
        calls.append(cmd)
        if 'tools/train.py' in cmd:
            work = cmd[cmd.index('--work-dir') + 1]
            os.makedirs(work, exist_ok=True)
            with open(osp.join(work, 'last_checkpoint'), 'w') as f:
                f.write(osp.join(work, 'epoch_4.pth'))
            return ''
        # +1 trained, +5 BatchNorm recalibrated: which call gave a figure
        shift = ('--checkpoint' in cmd) + 5 * ('--bn-recalibrate' in cmd)
        out = {'knn/top1': 60.0 + shift, 'knn/top5': 90.0}
        if '--linear' in cmd:
            out.update({'linear/top1': 80.0 + shift, 'linear/top5': 99.0})
        return f'log line\n{out}\n'

    monkeypatch.setattr(zoo, 'run', fake_run)
    probes = []
    monkeypatch.setattr(
        zoo, 'linear', lambda probe, *a: probes.append(probe) or {'x': 1}
    )
    return calls, probes


def _measure(config, argv, tmp_path):
    args = zoo.parse_args([config, '--work-root', str(tmp_path)] + argv)
    row = {'settings': zoo.settings(args)}
    zoo.measure(config, args, row, lambda: None)
    return args, row


def test_frozen_linear_where_no_probe_config_fits(monkeypatch, tmp_path):
    calls, probes = _fake_tools(monkeypatch, tmp_path)
    _, row = _measure(MIXMIM, ['--linear'], tmp_path)
    assert row['probe'] == 'tools/misc/knn_eval.py --linear'
    assert not probes  # no probe config trained
    # knn_eval --linear's linear figures, renamed as the probe's
    assert row['random_linear'] == {
        'accuracy/top1': 80.0,
        'accuracy/top5': 99.0,
    }
    assert row['trained_linear']['accuracy/top1'] == 81.0
    assert row['trained_knn'] == {'knn/top1': 61.0, 'knn/top5': 90.0}
    linear_calls = [c for c in calls if '--linear' in c]
    assert len(linear_calls) == 2
    ckpt = linear_calls[1][linear_calls[1].index('--checkpoint') + 1]
    assert ckpt == row['checkpoint']


def test_probe_config_kept_unless_frozen_linear(monkeypatch, tmp_path):
    calls, probes = _fake_tools(monkeypatch, tmp_path)
    _, row = _measure(MAE, ['--linear'], tmp_path / 'a')
    assert row['probe'].endswith('linear_vit-tiny-p4_1xb64-5e_demo.py')
    assert len(probes) == 2 and row['random_linear'] == {'x': 1}
    assert not [c for c in calls if '--linear' in c]
    args, row = _measure(MAE, ['--linear', '--frozen-linear'], tmp_path / 'b')
    assert row['probe'] == 'tools/misc/knn_eval.py --linear'
    assert len(probes) == 2  # no further probe training
    assert row['trained_linear']['accuracy/top1'] == 81.0
    assert zoo.command(MAE, args).endswith('--linear --frozen-linear')
    # rows measured before the flag existed keep their settings
    old = zoo.settings(zoo.parse_args([MAE, '--linear']))
    assert old == {'max_iters': None, 'linear': True, 'probe_max_iters': None}


SIMCLR = 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py'


def test_batchnorm_backbone_gets_one_probe_for_all_three(
    monkeypatch, tmp_path
):
    """A ResNet has a probe config, but its fair random baseline needs
    BatchNorm recalibrated, which only knn_eval --linear does: random,
    recalibrated and trained are all probed that way, each in the call
    that gives its kNN."""
    calls, probes = _fake_tools(monkeypatch, tmp_path)
    args, row = _measure(SIMCLR, ['--linear'], tmp_path)
    assert not probes and row['probe'] == 'tools/misc/knn_eval.py --linear'
    evals = [c for c in calls if 'tools/misc/knn_eval.py' in c]
    assert len(evals) == 3 and all('--linear' in c for c in evals)
    assert ['--bn-recalibrate' in c for c in evals] == [False, True, False]
    assert row['random_linear']['accuracy/top1'] == 80.0
    assert row['bnrecal_linear'] == {
        'accuracy/top1': 85.0,
        'accuracy/top5': 99.0,
    }
    assert row['bnrecal_knn'] == {'knn/top1': 65.0, 'knn/top5': 90.0}
    assert row['trained_linear']['accuracy/top1'] == 81.0
    assert zoo.complete(row, args)
    line = zoo.table({SIMCLR: dict(row, command='c')}, []).splitlines()[2]
    cells = [c.strip() for c in line.strip('|').split('|')]
    assert cells[2:8] == ['60.00', '65.00', '61.00', '80.00', '85.00', '81.00']


def test_linear_figures_of_another_probe_are_measured_again(
    monkeypatch, tmp_path
):
    """An old ResNet row: probe config figures (random BatchNorm at its
    initial statistics), no recalibrated linear figure. It is not skipped;
    its linear figures are replaced, its kNN and checkpoint kept."""
    calls, probes = _fake_tools(monkeypatch, tmp_path)
    old = {
        'settings': {
            'max_iters': None,
            'linear': True,
            'probe_max_iters': None,
        },
        'status': 'done',
        'probe': zoo.probe_config(SIMCLR, 'digits'),
        'random_knn': {'knn/top1': 1.0},
        'bnrecal_knn': {'knn/top1': 2.0},
        'trained_knn': {'knn/top1': 3.0},
        'random_linear': {'accuracy/top1': 15.6},
        'trained_linear': {'accuracy/top1': 85.0},
        'checkpoint': 'w/epoch_10.pth',
        'train_s': 9.0,
    }
    args = zoo.parse_args([SIMCLR, '--linear', '--work-root', str(tmp_path)])
    assert old['settings'] == zoo.settings(args)
    assert not zoo.complete(old, args)
    zoo.measure(SIMCLR, args, old, lambda: None)
    assert not [c for c in calls if 'tools/train.py' in c] and not probes
    assert old['random_linear']['accuracy/top1'] == 80.0
    assert old['bnrecal_linear']['accuracy/top1'] == 85.0
    assert old['trained_linear']['accuracy/top1'] == 81.0
    assert old['trained_knn'] == {'knn/top1': 3.0}  # kept
    trained = [c for c in calls if '--checkpoint' in c]
    assert trained[0][trained[0].index('--checkpoint') + 1] == 'w/epoch_10.pth'
    assert zoo.complete(old, args)


def test_row_of_an_older_recipe_is_measured_again(monkeypatch, tmp_path):
    """A row measured with the digits recipe on shapes, before the demo
    had a shapes sibling, is measured again with the sibling, every
    stage, not skipped as done nor completed from the old figures."""
    calls, _ = _fake_tools(monkeypatch, tmp_path)
    doc = tmp_path / 'zoo.md'
    doc.write_text('# zoo\n')
    argv = ['--dataset', 'shapes', '--doc', str(doc)]
    args = zoo.parse_args([MAE, *argv])
    old = {
        'settings': zoo.settings(args),
        'status': 'done',
        'trained_config': MAE,  # the digits recipe
        'random_knn': {'knn/top1': 1.0, 'knn/top5': 2.0},
        'bnrecal_knn': None,
        'checkpoint': 'old.pth',
        'trained_knn': {'knn/top1': 3.0, 'knn/top5': 4.0},
    }
    assert zoo.complete(old, args) and zoo.recipe_changed(old, MAE, args)
    (tmp_path / 'zoo.json').write_text(json.dumps({'shapes': {MAE: old}}))
    monkeypatch.setattr(zoo, 'write_table', lambda *a, **k: None)
    zoo.main([MAE, *argv, '--work-root', str(tmp_path / 'w')])
    row = json.loads((tmp_path / 'zoo.json').read_text())['shapes'][MAE]
    sibling = 'configs/mae/mae_vit-tiny-p8_1xb64-40e_shapes_demo.py'
    assert row['trained_config'] == sibling
    assert row['random_knn']['knn/top1'] == 60.0
    assert row['trained_knn']['knn/top1'] == 61.0
    assert row['checkpoint'] != 'old.pth'
    assert [c[2] for c in calls] == [sibling, sibling, sibling]
    assert not zoo.recipe_changed(row, MAE, args)
