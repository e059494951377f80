"""Test and validation loops that evaluate frozen features."""

from typing import Callable, Sequence

import torch
from mmengine.dist import is_main_process
from mmengine.runner import TestLoop, ValLoop

from mmssl.engine.runner.feature_extraction import batch_features
from mmssl.engine.runner.progress import progress
from mmssl.registry import LOOPS


def _feature_samples(
    model, data_batch: dict, feature_fn: Callable | None
) -> list:
    feats = batch_features(model, data_batch, feature_fn).cpu()
    samples: Sequence = data_batch['data_samples']
    out = []
    for feat, sample in zip(feats, samples):
        label = sample.gt_label if 'gt_label' in sample else torch.tensor(-1)
        out.append(
            dict(
                # a copy that owns its memory: a view (e.g. the CLS row of
                # the whole (B, 1 + N, C) token output) would be pickled
                # with its entire storage when ranks gather the results
                feat=feat.clone(),
                gt_label=label,
                knn_role=sample.metainfo.get('knn_role', 'query'),
            )
        )
    return out


class _FeatureLoopMixin:
    """Feeds ``dict(feat, gt_label, knn_role)`` per sample to the evaluator.

    Works for any algorithm: features come from ``model(x, mode='tensor')``
    (the backbone for mmpretrain's self-supervisors), pooled to one vector
    per image by :func:`mmssl.engine.runner.feature_extraction.pool_features`.
    """

    def _run_features(self) -> dict:
        self.runner.model.eval()
        bar = progress(
            self.dataloader,
            desc='kNN features',
            disable=not is_main_process(),
            leave=False,
        )
        for idx, data_batch in enumerate(bar):
            self.runner.call_hook(
                self._hook_name('before'), batch_idx=idx, data_batch=data_batch
            )
            with (
                torch.no_grad(),
                torch.autocast(
                    device_type=self._device_type(), enabled=self.fp16
                ),
            ):
                outputs = _feature_samples(self.runner.model, data_batch, None)
            self.evaluator.process(data_samples=outputs, data_batch=data_batch)
            self.runner.call_hook(
                self._hook_name('after'),
                batch_idx=idx,
                data_batch=data_batch,
                outputs=outputs,
            )
        return self.evaluator.evaluate(len(self.dataloader.dataset))

    def _device_type(self) -> str:
        try:
            return next(self.runner.model.parameters()).device.type
        except StopIteration:
            return 'cpu'


@LOOPS.register_module()
class FeatureTestLoop(_FeatureLoopMixin, TestLoop):
    """:class:`mmengine.runner.TestLoop` on frozen features (e.g. kNN)."""

    def _hook_name(self, when: str) -> str:
        return f'{when}_test_iter'

    def run(self) -> dict:
        self.runner.call_hook('before_test')
        self.runner.call_hook('before_test_epoch')
        metrics = self._run_features()
        self.runner.call_hook('after_test_epoch', metrics=metrics)
        self.runner.call_hook('after_test')
        return metrics


@LOOPS.register_module()
class FeatureValLoop(_FeatureLoopMixin, ValLoop):
    """:class:`mmengine.runner.ValLoop` on frozen features (e.g. kNN)."""

    def _hook_name(self, when: str) -> str:
        return f'{when}_val_iter'

    def run(self) -> dict:
        self.runner.call_hook('before_val')
        self.runner.call_hook('before_val_epoch')
        metrics = self._run_features()
        self.runner.call_hook('after_val_epoch', metrics=metrics)
        self.runner.call_hook('after_val')
        self.runner.model.train()
        return metrics
