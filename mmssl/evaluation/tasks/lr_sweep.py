# Copyright (c) mmssl contributors. All rights reserved.
"""Learning-rate sweep of a linear probe, chosen on a held-out split.

A linear probe's accuracy depends strongly on its learning rate, and the
best one differs between backbones, so the DINO papers (Caron et al.,
2021; Oquab et al., 2023, which trains one head per learning rate at
once) and LightlyTrain sweep it. Choosing on the test split would report
an optimistic figure; here each learning rate trains on the training split
minus a held-out part (a :class:`~mmssl.datasets.LabelSubset`, stratified
per class, fixed by its seed), the one with the best held-out accuracy is
chosen, and only that run is evaluated once on the test split.
"""

import copy
import json
import os
import os.path as osp
from typing import Dict, Optional, Sequence

from mmengine.config import Config

#: The default grid: a decade in three steps around SGD's usual 0.1.
DEFAULT_LRS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)


def _split_cfg(cfg: Config, holdout: float, seed: int) -> Config:
    """``cfg`` with train = train minus the held-out part, val = the
    held-out part (test-time pipeline), test untouched."""
    cfg = copy.deepcopy(cfg)
    train = cfg.train_dataloader.dataset
    if train.get('type') == 'LabelSubset':
        raise ValueError(
            'The probe config already wraps its training set in a '
            'LabelSubset; give the sweep the plain dataset (it draws the '
            'held-out part itself).'
        )
    held = copy.deepcopy(train)
    held.pipeline = copy.deepcopy(cfg.val_dataloader.dataset.pipeline)
    cfg.train_dataloader.dataset = dict(
        type='LabelSubset', dataset=train, holdout=holdout, seed=seed
    )
    cfg.val_dataloader = dict(
        copy.deepcopy(cfg.val_dataloader),
        dataset=dict(
            type='LabelSubset',
            dataset=held,
            holdout=holdout,
            seed=seed,
            part='holdout',
        ),
    )
    # validate once, on the held-out part, when training ends
    cfg.train_cfg = dict(cfg.train_cfg, val_interval=10**9)
    return cfg


def _run_name(lr: float) -> str:
    return f'lr_{lr:g}'


def sweep_linear_probe(
    cfg: Config,
    lrs: Sequence[float] = DEFAULT_LRS,
    work_dir: Optional[str] = None,
    holdout: float = 0.1,
    seed: int = 0,
    metric: str = 'accuracy/top1',
    test: bool = True,
) -> Dict:
    """Train the probe of ``cfg`` once per learning rate; choose on a
    held-out part of the training split; test only the chosen one.

    Args:
        cfg (Config): A linear-probe config (``configs/benchmarks/
            linear_probe/``) with train, val (its pipeline is used for the
            held-out part) and test dataloaders.
        lrs (Sequence[float]): Learning rates (``optim_wrapper.optimizer.
            lr``), each used as given (no ``auto_scale_lr``).
        work_dir (str, optional): Runs go to ``work_dir/lr_<lr>``; the
            summary to ``work_dir/lr_sweep.json``. Defaults to
            ``cfg.work_dir``.
        holdout (float): Share of each class of the training split held
            out. Defaults to 0.1.
        seed (int): Seed of the held-out draw. Defaults to 0.
        metric (str): Held-out metric to maximise. Defaults to
            ``'accuracy/top1'``.
        test (bool): Evaluate the chosen run on the test split. Defaults
            to True.

    Returns:
        dict: ``holdout`` ({lr: metrics}), ``best_lr``, ``best_holdout``
        (its ``metric``), ``test`` (test metrics of the chosen run, or
        None), ``holdout_share`` and ``seed``.
    """
    from mmssl.checkpoint import loading_policy
    from mmssl.engine.runner import build_runner

    if not lrs:
        raise ValueError('No learning rates to sweep.')
    work_dir = work_dir or cfg.get('work_dir')
    if not work_dir:
        raise ValueError('Give a work_dir for the sweep runs.')
    base = _split_cfg(cfg, holdout, seed)
    results, best = {}, None
    for lr in lrs:
        run = copy.deepcopy(base)
        run.optim_wrapper.optimizer.lr = float(lr)
        run.work_dir = osp.join(work_dir, _run_name(lr))
        run.pop('auto_scale_lr', None)
        runner = build_runner(run)
        runner.train()
        metrics = {k: float(v) for k, v in runner.val_loop_once().items()}
        if metric not in metrics:
            raise KeyError(
                f'Held-out metrics {sorted(metrics)} have no {metric!r}.'
            )
        results[lr] = metrics
        if best is None or metrics[metric] > results[best[0]][metric]:
            best = (lr, runner)  # keep only the best run's runner
    best_lr, runner = best
    tested = None
    if test and runner.test_dataloader is not None:
        # PretrainedInitHook reloads init_cfg before testing: under the
        # checkpoint policy, as tools/test.py runs it
        with loading_policy(cfg.get('trust_checkpoint'), 'the probe'):
            tested = {k: float(v) for k, v in runner.test().items()}
    summary = dict(
        holdout={_run_name(lr): m for lr, m in results.items()},
        best_lr=best_lr,
        best_holdout=results[best_lr][metric],
        metric=metric,
        test=tested,
        holdout_share=holdout,
        seed=seed,
    )
    os.makedirs(work_dir, exist_ok=True)
    with open(osp.join(work_dir, 'lr_sweep.json'), 'w') as f:
        json.dump(summary, f, indent=2)
    return summary


__all__ = ['DEFAULT_LRS', 'sweep_linear_probe']
