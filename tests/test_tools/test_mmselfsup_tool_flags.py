"""visualize_tsne.py and browse_dataset.py take MMSelfSup 1.x's flags."""

import os.path as osp

import numpy as np
import pytest

from mmssl.visualization.tsne import first_classes, run_tsne
from tests.support.tools import load_tool

# MMSelfSup 1.0.0's visualize_tsne.py flags, each with a value
MMSELFSUP_TSNE = [
    'cfg.py', '--checkpoint', 'c.pth', '--vis-stage', 'backbone',
    '--max-num-class', '5', '--seed', '1', '--deterministic',
    '--cfg-options', 'model.backbone.depth=18', '--device', 'cpu',
    '--n-components', '3', '--perplexity', '10', '--early-exaggeration',
    '8', '--learning-rate', '100', '--n-iter', '300',
    '--n-iter-without-progress', '100', '--init', 'random',
]  # fmt: skip


def test_tsne_takes_every_mmselfsup_flag():
    tool = load_tool('analysis_tools/visualize_tsne.py')
    args = tool.parse_args(MMSELFSUP_TSNE)
    tool.check_mmselfsup_flags(args)
    # MMSelfSup had no required --work-dir: a default under work_dirs/
    assert args.work_dir == osp.join('work_dirs', 'cfg', 'tsne')
    assert args.max_num_class == 5 and args.n_iter == 300
    assert tool.tsne_options(args) == dict(
        n_components=3,
        early_exaggeration=8.0,
        learning_rate=100.0,
        n_iter_without_progress=100,
        init='random',
    )


@pytest.mark.parametrize('stage', ['neck', 'pre_logits'])
def test_tsne_names_the_flag_for_other_stages(stage, capsys):
    tool = load_tool('analysis_tools/visualize_tsne.py')
    args = tool.parse_args(['cfg.py', '--vis-stage', stage])
    with pytest.raises(SystemExit) as info:
        tool.check_mmselfsup_flags(args)
    assert f'--vis-stage {stage}' in str(info.value)
    assert '--feature' in str(info.value)


def test_tsne_options_reach_sklearn():
    rng = np.random.default_rng(0)
    feats = rng.normal(size=(12, 4))
    emb = run_tsne(feats, perplexity=3, n_iter=250, seed=0, n_components=3,
                   init='random', learning_rate=50.0,
                   early_exaggeration=4.0)  # fmt: skip
    assert emb.shape == (12, 3)
    # the same options give the same embedding; another init does not
    again = run_tsne(feats, perplexity=3, n_iter=250, seed=0, n_components=3,
                     init='random', learning_rate=50.0,
                     early_exaggeration=4.0)  # fmt: skip
    np.testing.assert_allclose(emb, again)
    other = run_tsne(feats, perplexity=3, n_iter=250, seed=0, n_components=3,
                     init='pca', learning_rate=50.0,
                     early_exaggeration=4.0)  # fmt: skip
    assert not np.allclose(emb, other)


def test_first_classes():
    labels = np.array([0, 3, 1, -1, 2, 5])
    assert first_classes(labels, 2).tolist() == [
        True, False, True, True, False, False
    ]  # fmt: skip
    with pytest.raises(ValueError, match='--max-num-class'):
        first_classes(labels, 0)


def test_browse_dataset_takes_mmselfsup_flags(capsys):
    tool = load_tool('analysis_tools/browse_dataset.py')
    args = tool.parse_args(
        ['configs/x/my_cfg.py', '--not-show', '--show-interval', '2']
    )
    assert args.output_dir == osp.join('work_dirs', 'my_cfg', 'browse_dataset')
    assert '--show-interval ignored' in capsys.readouterr().out
    args = tool.parse_args(['c.py', '--output-dir', 'out'])
    assert args.output_dir == 'out' and not args.not_show


def test_tsne_max_num_class_keeps_the_first_classes():
    import torch
    from mmpretrain.structures import DataSample

    tool = load_tool('analysis_tools/visualize_tsne.py')
    args = tool.parse_args(['cfg.py', '--max-num-class', '2'])
    samples = [DataSample().set_gt_label(c) for c in (0, 2, 1, 3)]
    samples.append(DataSample())  # unlabelled: kept, label -1
    feats = torch.arange(10.0).view(5, 2)
    out, labels, src = tool.as_arrays(feats, samples, [0, 0, 1, 1, 1], args)
    assert labels.tolist() == [0, 1, -1]
    assert out.tolist() == [[0, 1], [4, 5], [8, 9]]
    assert src.tolist() == [0, 1, 1]
