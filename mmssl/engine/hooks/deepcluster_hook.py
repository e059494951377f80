"""Re-clustering hook of DeepCluster."""

from typing import Optional

import torch
from mmengine.hooks import Hook
from mmengine.logging import print_log

from mmssl.registry import HOOKS

from .clustering import (
    broadcast_tensor,
    extract_train_features,
    kmeans,
    neck_features,
)


def _unwrap(model):
    return getattr(model, 'module', model)


@HOOKS.register_module()
class DeepClusterHook(Hook):
    """Every ``interval`` epochs: k-means on the features of the whole
    training set, new pseudo-labels, classifier re-initialised, sampler set
    to draw uniformly over clusters.

    Caron et al., "Deep Clustering for Unsupervised Learning of Visual
    Features", ECCV 2018, https://arxiv.org/abs/1807.05520.

    Args:
        extract_pipeline (list[dict]): Deterministic pipeline for feature
            extraction (load, resize, pack).
        num_classes (int, optional): Number of clusters; defaults to the
            model's ``num_classes``.
        pca_dim (int, optional): PCA-whiten to this dimension before
            k-means (the paper uses 256). Defaults to None (no PCA).
        interval (int): Re-cluster every ``interval`` epochs. Defaults to 1.
        batch_size (int): Extraction batch size. Defaults to 128.
        num_workers (int): Extraction workers. Defaults to 0.
        max_iter (int): k-means iterations. Defaults to 50.
        seed (int): k-means seed (plus the epoch). Defaults to 0.
    """

    priority = 'NORMAL'

    def __init__(
        self,
        extract_pipeline: list,
        num_classes: Optional[int] = None,
        pca_dim: Optional[int] = None,
        interval: int = 1,
        batch_size: int = 128,
        num_workers: int = 0,
        max_iter: int = 50,
        seed: int = 0,
    ) -> None:
        self.extract_pipeline = extract_pipeline
        self.num_classes = num_classes
        self.pca_dim = pca_dim
        self.interval = interval
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.max_iter = max_iter
        self.seed = seed

    def before_train_epoch(self, runner) -> None:
        model = _unwrap(runner.model)
        sampler = getattr(runner.train_dataloader, 'sampler', None)
        loop = getattr(runner, 'train_loop', None)
        resumed_inside = getattr(loop, 'resume_batches', 0) > 0
        if runner.epoch % self.interval != 0 or resumed_inside:
            # Not a clustering epoch, or the rest of an epoch resumed from a
            # checkpoint: reuse the labels saved in the checkpoint (those
            # this epoch was clustered with).
            if hasattr(sampler, 'set_labels'):
                sampler.set_labels(model.pseudo_labels.cpu())
            return
        num_classes = self.num_classes or model.num_classes
        feats = extract_train_features(
            runner,
            self.extract_pipeline,
            self.batch_size,
            self.num_workers,
            neck_features,
        )
        labels = None
        if feats is not None:
            labels, _ = kmeans(
                feats,
                num_classes,
                seed=self.seed + runner.epoch,
                max_iter=self.max_iter,
                pca_dim=self.pca_dim,
            )
            labels = torch.from_numpy(labels)
            sizes = torch.bincount(labels, minlength=num_classes)
            print_log(
                f'DeepCluster epoch {runner.epoch}: {num_classes} clusters, '
                f'{int((sizes == 0).sum())} empty, sizes '
                f'{int(sizes.min())}..{int(sizes.max())}',
                logger='current',
            )
        labels = broadcast_tensor(
            labels,
            tuple(model.pseudo_labels.shape),
            torch.long,
            model.pseudo_labels.device,
        )
        model.set_pseudo_labels(labels)
        if hasattr(sampler, 'set_labels'):
            sampler.set_labels(labels.cpu())
