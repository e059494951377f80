"""tools/analysis_tools/zoo_report.py: measures demos, writes the table."""

import json
import os
import os.path as osp
import shutil

import pytest

from ._utils import load_tool

zoo = load_tool('analysis_tools/zoo_report.py')
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
        'config': 'configs/mae/mae_vit-tiny-p8_1xb64-4e_shapes_demo.py',
        'options': [],
    }
    # no 64 px variant: the digits recipe, every folder moved to data/shapes
    byol = 'configs/byol/byol_resnet18-w16_1xb64-4e_demo.py'
    options = zoo.resolve(byol, 'shapes')['options']
    assert 'train_dataloader.dataset.data_root=data/shapes/train' in options
    assert 'test_dataloader.dataset.query.data_root=data/shapes' in options


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
    assert cells[8] == f'`{row["command"]}`'
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
    assert lines[2] == unmeasured + ' |' * 7
    # measured before the BatchNorm baseline existed (old JSON): '-'
    assert lines[3] == (
        f'| `{MAE}` | full schedule | 11.00 | - | 22.00 | 33.00 | - | 44 | '
        '`python x` |'
    )
    row['bnrecal_knn'] = {'knn/top1': 5.5}
    line = zoo.table({MAE: row}, [MAE]).splitlines()[2]
    assert line.startswith(f'| `{MAE}` | full schedule | 11.00 | 5.50 |')


def test_batchnorm_baseline_only_where_the_backbone_has_batchnorm():
    assert zoo.has_batchnorm('configs/byol/byol_resnet18-w16_1xb64-4e_demo.py')
    assert zoo.has_batchnorm(
        'configs/spark/spark_sparse-resnet18_1xb64-4e_demo.py'
    )
    assert not zoo.has_batchnorm(MAE)
