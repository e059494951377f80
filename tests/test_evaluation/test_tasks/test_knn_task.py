"""One kNN: the validation loop with its metric, the evaluation task
behind ``tools/eval.py --task knn`` / ``tools/misc/knn_eval.py`` and the
function they both reach give the same top-1 on the same features."""

import os.path as osp
from argparse import Namespace

import torch
from mmengine.config import Config

from mmssl.engine.runner import build_runner
from mmssl.engine.runner.feature_extraction import extract_features
from mmssl.evaluation import topk_accuracy, weighted_knn_scores
from mmssl.evaluation.tasks.evaluate import run_knn_task
from mmssl.registry import MODELS
from mmssl.setup_env import register_all_modules

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.dirname(__file__))))
DEMO = osp.join(
    ROOT, 'configs', 'simclr', 'simclr_resnet18-w16_1xb64-10e_demo.py'
)


def _data_options(root: str, loader: str) -> dict:
    """48 bank and 48 query digits of ``root`` (1438 train and 359 val
    images, sorted by class: every k-th one covers the ten classes)."""
    options = {f'{loader}.num_workers': 0}
    for split, step in (('bank', 30), ('query', 7.5)):
        options[f'{loader}.dataset.{split}.data_root'] = root
        indices = [int(i * step) for i in range(48)]
        options[f'{loader}.dataset.{split}.indices'] = indices
    return options


def test_val_loop_metric_and_eval_task_agree(demo_data_root, tmp_path):
    register_all_modules()
    # weights both paths load (a random init; what counts is that it is
    # the same one)
    cfg = Config.fromfile(DEMO)
    torch.manual_seed(3)
    model = MODELS.build(cfg.model)
    model.init_weights()
    ckpt = str(tmp_path / 'weights.pth')
    torch.save(dict(state_dict=model.state_dict(), meta=dict()), ckpt)

    # 1. FeatureValLoop + KNNAccuracy, as during training
    cfg.merge_from_dict(_data_options(demo_data_root, 'val_dataloader'))
    assert cfg.val_cfg.type == 'FeatureValLoop'
    assert cfg.val_evaluator.type == 'KNNAccuracy'
    for key in ('train_dataloader', 'train_cfg', 'optim_wrapper'):
        cfg[key] = None
    cfg.param_scheduler = cfg.test_dataloader = None
    cfg.test_cfg = cfg.test_evaluator = None
    cfg.default_hooks.checkpoint = None
    cfg.work_dir = str(tmp_path / 'val')
    cfg.load_from = ckpt
    runner = build_runner(cfg)
    val = runner.val()

    # 2. the evaluation task (tools/eval.py --task knn, without --data:
    # the config's kNN split)
    args = Namespace(
        config=DEMO,
        checkpoint=ckpt,
        prefix=None,
        network=None,
        data=None,
        crop=None,
        work_dir=str(tmp_path / 'task'),
        task='knn',
        trusted=None,
        cfg_options=_data_options(demo_data_root, 'test_dataloader'),
        allow_new_keys=False,
        threads=None,
    )
    task = run_knn_task(args)
    assert args.counts == dict(bank=48, queries=48)

    # 3. the function itself on the loop's features
    feats, samples = extract_features(runner.model, runner.val_dataloader)
    bank = torch.tensor([s.knn_role == 'bank' for s in samples])
    labels = torch.tensor([int(s.gt_label) for s in samples])
    assert int(bank.sum()) == 48 and len(samples) == 96
    scores = weighted_knn_scores(
        feats[~bank], feats[bank], labels[bank], 10, k=20, temperature=0.07
    )
    direct = topk_accuracy(scores, labels[~bank], (1, 5))

    # above the floor of the data (10.4: the most frequent bank class),
    # below 100: an agreement that k, the temperature or the features
    # would change
    assert task['knn/floor_top1'] < val['knn/top1'] < 100
    for key in ('top1', 'top5'):
        assert task[f'knn/{key}'] == val[f'knn/{key}'] == direct[key]
