"""Linear-probe top-k accuracy on frozen features, fitted on the kNN bank."""

import torch
import torch.nn.functional as F
from mmengine.logging import print_log

from mmssl.registry import METRICS

from ..functional import topk_accuracy
from .knn_accuracy import KNNAccuracy, split_bank_query


def fit_linear_probe(
    feats: torch.Tensor,
    labels: torch.Tensor,
    num_classes: int,
    weight_decay: float = 5e-3,
    max_iter: int = 300,
):
    """Multinomial logistic regression on standardised features.

    Minimises ``mean cross-entropy + weight_decay / 2 * ||W||^2`` (bias not
    decayed) with full-batch L-BFGS in float64 from zero weights, so the fit
    is deterministic. ``weight_decay = 1 / N`` is scikit-learn's
    ``LogisticRegression(C=1)`` on ``N`` samples.

    Args:
        feats (torch.Tensor): (N, C) training features.
        labels (torch.Tensor): (N, ) integer labels in [0, num_classes).
        num_classes (int): Number of classes.
        weight_decay (float): L2 weight on W. Defaults to 5e-3.
        max_iter (int): L-BFGS iterations. Defaults to 300.

    Returns:
        callable: ``scores(x) -> (M, num_classes)`` logits for new features
        (standardised with the training mean and std).
    """
    if weight_decay < 0:
        raise ValueError(f'weight_decay must be >= 0, got {weight_decay}')
    x = feats.double()
    mean = x.mean(dim=0)
    std = x.std(dim=0).clamp(min=1e-8) if len(x) > 1 else torch.ones_like(mean)
    x = (x - mean) / std
    y = labels.long()
    weight = torch.zeros(x.shape[1], num_classes, dtype=torch.float64)
    bias = torch.zeros(num_classes, dtype=torch.float64)
    weight.requires_grad_(True)
    bias.requires_grad_(True)
    optimizer = torch.optim.LBFGS(
        [weight, bias],
        lr=1.0,
        max_iter=max_iter,
        tolerance_grad=1e-9,
        tolerance_change=1e-12,
        history_size=20,
        line_search_fn='strong_wolfe',
    )

    def closure():
        optimizer.zero_grad()
        loss = F.cross_entropy(x @ weight + bias, y)
        loss = loss + 0.5 * weight_decay * weight.pow(2).sum()
        loss.backward()
        return loss

    with torch.enable_grad():
        optimizer.step(closure)
    weight, bias = weight.detach(), bias.detach()

    def scores(query: torch.Tensor) -> torch.Tensor:
        return ((query.double() - mean) / std) @ weight + bias

    return scores


@METRICS.register_module()
class LinearProbeAccuracy(KNNAccuracy):
    """Linear-probe accuracy on frozen features (the usual measure of
    masked-image modelling, He et al. 2022, Sec. 4).

    Takes the same data samples as :class:`KNNAccuracy` (``feat``,
    ``gt_label``, ``knn_role``): a logistic regression
    (:func:`fit_linear_probe`) is fitted on the ``'bank'`` features and
    scored on the ``'query'`` ones. Use it next to the kNN metric::

        val_evaluator = [
            dict(type='KNNAccuracy', k=20, topk=(1,)),
            dict(type='LinearProbeAccuracy'),
        ]

    Args:
        weight_decay (float): L2 weight of the probe. Defaults to 5e-3
            (``1 / N`` for a bank of 200).
        max_iter (int): L-BFGS iterations. Defaults to 300.
        topk (tuple[int]): Accuracies to report. Defaults to (1, ).
        prefix (str): Metric name prefix. Defaults to ``'linear'``.
    """

    default_prefix = 'linear'

    def __init__(
        self,
        weight_decay: float = 5e-3,
        max_iter: int = 300,
        topk: tuple = (1,),
        collect_device: str = 'cpu',
        prefix: str | None = None,
    ) -> None:
        super().__init__(
            topk=topk, collect_device=collect_device, prefix=prefix
        )
        if weight_decay < 0:
            raise ValueError(f'weight_decay must be >= 0, got {weight_decay}')
        self.weight_decay = weight_decay
        self.max_iter = max_iter

    def compute_metrics(self, results: list) -> dict:
        bank_feats, bank_labels, query_feats, query_labels = split_bank_query(
            results, type(self).__name__
        )
        num_classes = int(max(bank_labels.max(), query_labels.max())) + 1
        probe = fit_linear_probe(
            bank_feats,
            bank_labels,
            num_classes,
            self.weight_decay,
            self.max_iter,
        )
        acc = topk_accuracy(probe(query_feats), query_labels, self.topk)
        print_log(
            f'linear probe (weight_decay={self.weight_decay}) fitted on '
            f'{len(bank_feats)} bank features, {len(query_feats)} queries: '
            + ', '.join(f'{n}={v:.2f}' for n, v in acc.items()),
            logger='current',
        )
        return acc
