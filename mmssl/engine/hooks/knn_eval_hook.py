"""Online kNN evaluation during self-supervised pretraining."""

import copy
import time
from typing import Sequence

import torch
from mmengine.dist import broadcast_object_list, is_main_process
from mmengine.logging import print_log

from mmssl.evaluation import (
    extract_features,
    topk_accuracy,
    weighted_knn_scores,
)
from mmssl.registry import HOOKS

from .feature_eval_hook import (
    FeatureEvalHook,
    build_eval_loader,
    gather_results,
    kept_modes,
)


@HOOKS.register_module()
class KNNEvalHook(FeatureEvalHook):
    """Weighted kNN accuracy of the backbone, every N epochs or iterations.

    The evaluation of Wu et al. 2018 (https://arxiv.org/abs/1805.01978) as
    used by DINO (https://arxiv.org/abs/2104.14294): features of a labelled
    ``bank`` split vote for the class of each ``query`` sample. Features
    come from the teacher's backbone when the model has one (a ``teacher``,
    see :data:`mmssl.checkpoint.state_dict.TEACHER_BACKBONE_PATHS`),
    otherwise from ``model(inputs, mode='tensor')`` (the algorithm's
    ``extract_feat``), pooled to one vector per image.

    Dataloaders are built lazily at the first evaluation and reused. Each
    rank extracts its shard (the default ``DefaultSampler`` splits the data
    across ranks), results are gathered on rank 0, which computes the
    accuracies and broadcasts them. They are logged as ``knn/top1``,
    ``knn/top5`` (and ``knn/time`` in seconds) to the text log and to every
    visualizer backend (TensorBoard, W&B, local ``scalars.json``). All
    modules get their train/eval mode back afterwards.

    Args:
        bank_dataloader (dict): Dataloader config of the labelled bank
            (e.g. the train split with ``CustomDataset`` and a plain
            pipeline). ``sampler`` defaults to a non-shuffling
            ``DefaultSampler``.
        query_dataloader (dict): Dataloader config of the labelled queries.
        interval (int): Evaluate every ``interval`` epochs (``by_epoch``)
            or iterations. Defaults to 1.
        by_epoch (bool): Count epochs rather than iterations.
            Defaults to True.
        k (int): Neighbours. Defaults to 20.
        temperature (float): Vote temperature. Defaults to 0.07.
        topk (Sequence[int]): Accuracies to report. Defaults to (1, 5).
        backbone_path (str, optional): Dotted path of the module to
            evaluate (its output is pooled); overrides the automatic
            choice. Defaults to None.
        prefer_teacher (bool): Use the teacher's backbone when there is
            one. Defaults to True.
        eval_before_train (bool): Also evaluate before training starts
            (the random-init baseline). Defaults to False.
        prefix (str): Name prefix of the logged scalars. Defaults to 'knn'.
    """

    priority = 'LOW'

    def __init__(
        self,
        bank_dataloader: dict,
        query_dataloader: dict,
        interval: int = 1,
        by_epoch: bool = True,
        k: int = 20,
        temperature: float = 0.07,
        topk: Sequence[int] = (1, 5),
        backbone_path: str | None = None,
        prefer_teacher: bool = True,
        eval_before_train: bool = False,
        prefix: str = 'knn',
    ) -> None:
        super().__init__(
            interval=interval,
            by_epoch=by_epoch,
            backbone_path=backbone_path,
            prefer_teacher=prefer_teacher,
            eval_before_train=eval_before_train,
            prefix=prefix,
        )
        if k < 1:
            raise ValueError(f'k must be >= 1, got {k}')
        if temperature <= 0:
            raise ValueError(f'temperature must be > 0, got {temperature}')
        self.bank_cfg = copy.deepcopy(bank_dataloader)
        self.query_cfg = copy.deepcopy(query_dataloader)
        self.k = k
        self.temperature = temperature
        self.topk = tuple(topk)
        self._loaders = None

    def _build_loaders(self, runner):
        if self._loaders is None:
            self._loaders = tuple(
                build_eval_loader(copy.deepcopy(cfg), seed=runner.seed)
                for cfg in (self.bank_cfg, self.query_cfg)
            )
        return self._loaders

    def _features(self, model, loader, fn, desc):
        feats, samples = extract_features(model, loader, fn, desc=desc)
        labels = []
        for s in samples:
            label = s.gt_label if 'gt_label' in s else None
            if label is None:
                raise ValueError(
                    'KNNEvalHook needs labelled samples (gt_label); the '
                    f'{desc} dataset gave unlabelled ones. Use a '
                    'CustomDataset over <root>/<class>/* folders.'
                )
            labels.append(int(torch.as_tensor(label).reshape(-1)[0]))
        return gather_results(list(zip(feats, labels)), len(loader.dataset))

    @torch.no_grad()
    def evaluate(self, runner, step: int | None = None) -> dict:
        """Run one kNN evaluation; return (and log) the accuracies.

        Args:
            runner (Runner): The runner.
            step (int, optional): Epoch (``by_epoch``) or iteration number
                shown in the log; the visualizer step is always the number
                of finished iterations.
        """
        start = time.perf_counter()
        bank_loader, query_loader = self._build_loaders(runner)
        model = runner.model
        fn, source = self._feature_fn(model)
        with kept_modes(model):
            bank = self._features(model, bank_loader, fn, 'kNN bank')
            query = self._features(model, query_loader, fn, 'kNN query')
        metrics = [None]
        if is_main_process():
            bank_feats = torch.stack([f for f, _ in bank])
            bank_labels = torch.tensor([lb for _, lb in bank])
            query_feats = torch.stack([f for f, _ in query])
            query_labels = torch.tensor([lb for _, lb in query])
            num_classes = int(max(bank_labels.max(), query_labels.max())) + 1
            scores = weighted_knn_scores(
                query_feats,
                bank_feats,
                bank_labels,
                num_classes,
                self.k,
                self.temperature,
            )
            acc = topk_accuracy(scores, query_labels, self.topk)
            metrics = [{f'{self.prefix}/{n}': v for n, v in acc.items()}]
        broadcast_object_list(metrics)
        result = dict(metrics[0])
        seconds = time.perf_counter() - start
        result[f'{self.prefix}/time'] = seconds
        step = self._resolve_step(step, runner)
        self._log_scalars(runner, result)
        print_log(
            f'kNN eval (k={self.k}, T={self.temperature}, features from '
            f'{source}) at {self._step_name(step)}: '
            + ', '.join(f'{k}={v:.2f}' for k, v in result.items())
            + f' ({len(query_loader.dataset)} queries, bank of '
            f'{len(bank_loader.dataset)})',
            logger='current',
        )
        self.last_metrics = result
        return result
