"""RankMe as a validation metric: label-free, on any folder of images."""

from typing import Sequence

from mmengine.evaluator import BaseMetric
from mmengine.logging import print_log

from mmssl.registry import METRICS

from ..rank import rank_metrics

#: Below this RankMe the features span about one direction: collapse.
COLLAPSE_RANKME = 1.5
#: What to check when the features collapse (the metric's and
#: RankMeHook's warnings).
COLLAPSE_CHECKS = (
    'Check the learning rate (too high?), the teacher temperature (too '
    'high, or its warm-up) and the loss (stuck at a constant, e.g. ln of '
    'the number of prototypes?).'
)


@METRICS.register_module()
class RankMe(BaseMetric):
    """RankMe and spread of frozen features (:mod:`mmssl.evaluation.rank`).

    Expects the ``feat`` of each sample, as :class:`FeatureValLoop` and
    :class:`FeatureTestLoop` produce them; labels are not read, so the
    dataset can be any folder of images (the training folder included).
    Results of all ranks are gathered before the computation. Logs a
    warning when RankMe falls below 1.5 (the features have collapsed to
    about one direction).

    Args:
        prefix (str): Metric name prefix. Defaults to ``'rank'``: the
            metrics are ``rank/rankme``, ``rank/rankme_fraction``,
            ``rank/spread``.
    """

    default_prefix = 'rank'

    def process(self, data_batch, data_samples: Sequence[dict]) -> None:
        for sample in data_samples:
            self.results.append(sample['feat'].detach().float().cpu().clone())

    def compute_metrics(self, results: list) -> dict:
        import torch

        if len(results) < 2:
            raise ValueError(
                f'RankMe needs the features of at least 2 images, the '
                f'validation data gave {len(results)}: point '
                'val_dataloader.dataset at a folder with more images.'
            )
        out = rank_metrics(torch.stack(results))
        n, d = int(out['images']), int(out['dim'])
        print_log(
            f'RankMe {out["rankme"]:.2f} of at most {min(n, d)} ({n} '
            f'images, {d}-d features), '
            f'spread {out["spread"]:.3f}',
            logger='current',
        )
        if out['rankme'] < COLLAPSE_RANKME:
            print_log(
                f'RankMe is {out["rankme"]:.2f}: the features of all images '
                f'lie on about one direction (collapse). {COLLAPSE_CHECKS}',
                logger='current',
                level=30,
            )
        return dict(
            rankme=out['rankme'],
            rankme_fraction=out['rankme_fraction'],
            spread=out['spread'],
        )
