"""kNN top-k accuracy on frozen features."""

from typing import Sequence

import torch
from mmengine.evaluator import BaseMetric
from mmengine.logging import print_log

from mmssl.registry import METRICS

from ..functional import topk_accuracy, weighted_knn_scores


def split_bank_query(results: list, metric: str = 'KNNAccuracy'):
    """(bank features, bank labels, query features, query labels) of the
    ``(feat, label, is_bank)`` results of a feature metric."""
    bank = [r for r in results if r[2]]
    query = [r for r in results if not r[2]]
    if not bank or not query:
        raise ValueError(
            f'{metric} needs bank and query samples, got {len(bank)} '
            f'bank and {len(query)} query samples. Use a KNNDataset '
            'with a labelled `bank` (train) and `query` (val) split.'
        )
    return (
        torch.stack([r[0] for r in bank]),
        torch.tensor([r[1] for r in bank]),
        torch.stack([r[0] for r in query]),
        torch.tensor([r[1] for r in query]),
    )


@METRICS.register_module()
class KNNAccuracy(BaseMetric):
    """Weighted kNN accuracy (Wu et al. 2018, as in DINO's evaluation).

    Expects data samples (as produced by :class:`FeatureTestLoop`) that
    carry ``feat`` (C, ), ``gt_label`` and ``knn_role`` (``'bank'`` for the
    labelled train split, ``'query'`` for the evaluated split), e.g. from a
    :class:`KNNDataset`. Results of all ranks are gathered before the
    computation, so it is correct under distributed evaluation.

    Args:
        k (int): Number of neighbours. Defaults to 20.
        temperature (float): Vote temperature. Defaults to 0.07.
        topk (tuple[int]): Accuracies to report. Defaults to (1, 5).
        prefix (str): Metric name prefix. Defaults to ``'knn'``.
    """

    default_prefix = 'knn'

    def __init__(
        self,
        k: int = 20,
        temperature: float = 0.07,
        topk: tuple = (1, 5),
        collect_device: str = 'cpu',
        prefix: str | None = None,
    ) -> None:
        super().__init__(collect_device=collect_device, prefix=prefix)
        if k < 1:
            raise ValueError(f'k must be >= 1, got {k}')
        self.k = k
        self.temperature = temperature
        self.topk = tuple(topk)

    def process(self, data_batch, data_samples: Sequence[dict]) -> None:
        for sample in data_samples:
            label = sample['gt_label']
            if isinstance(label, torch.Tensor):
                label = int(label.reshape(-1)[0])
            self.results.append(
                (
                    # clone: own memory, so that gathering results across
                    # ranks (pickled) does not carry a whole batch's storage
                    sample['feat'].detach().float().cpu().clone(),
                    int(label),
                    sample.get('knn_role', 'query') == 'bank',
                )
            )

    def compute_metrics(self, results: list) -> dict:
        bank_feats, bank_labels, query_feats, query_labels = split_bank_query(
            results, type(self).__name__
        )
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
        print_log(
            f'kNN (k={self.k}, T={self.temperature}) on {len(query_feats)} '
            f'queries against a bank of {len(bank_feats)}: '
            + ', '.join(f'{n}={v:.2f}' for n, v in acc.items()),
            logger='current',
        )
        return acc
