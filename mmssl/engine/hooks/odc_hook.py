"""Memory initialisation and centroid maintenance of ODC."""

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


@HOOKS.register_module()
class ODCHook(Hook):
    """Drives ODC's sample and centroid memories.

    Zhan et al., "Online Deep Clustering for Unsupervised Representation
    Learning", CVPR 2020, https://arxiv.org/abs/2006.10645.

    * before training (unless a resumed checkpoint already holds them):
      k-means on the features of the whole training set initialises the
      sample memory, its labels and the centroids;
    * every ``centroids_update_interval`` iterations the centroids are
      recomputed from the sample memory;
    * every ``deal_with_small_clusters_interval`` iterations clusters with
      fewer than ``min_cluster`` samples are dissolved and refilled by
      splitting the largest cluster;
    * the per-class loss weights follow the cluster sizes.

    Args:
        extract_pipeline (list[dict]): Deterministic pipeline for the
            initial feature extraction.
        centroids_update_interval (int): In iterations. Defaults to 10.
        deal_with_small_clusters_interval (int): In iterations.
            Defaults to 1.
        batch_size (int): Extraction batch size. Defaults to 128.
        num_workers (int): Extraction workers. Defaults to 0.
        seed (int): k-means seed. Defaults to 0.
    """

    def __init__(
        self,
        extract_pipeline: list,
        centroids_update_interval: int = 10,
        deal_with_small_clusters_interval: int = 1,
        batch_size: int = 128,
        num_workers: int = 0,
        seed: int = 0,
    ) -> None:
        self.extract_pipeline = extract_pipeline
        self.centroids_update_interval = centroids_update_interval
        self.small_interval = deal_with_small_clusters_interval
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.seed = seed

    def before_train(self, runner) -> None:
        model = getattr(runner.model, 'module', runner.model)
        memory = model.memory
        if bool(memory.initialized):
            return  # resumed: the memory came with the checkpoint
        feats = extract_train_features(
            runner,
            self.extract_pipeline,
            self.batch_size,
            self.num_workers,
            neck_features,
        )
        labels = None
        if feats is not None and len(feats) != len(memory.features):
            raise ValueError(
                f'The training set has {len(feats)} images but the ODC '
                f'memory {len(memory.features)} entries; set '
                f'model.num_samples={len(feats)}.'
            )
        if feats is not None:
            labels = torch.from_numpy(
                kmeans(feats, memory.num_classes, seed=self.seed)[0]
            )
        device = memory.features.device
        feats = broadcast_tensor(
            feats, tuple(memory.features.shape), torch.float32, device
        )
        labels = broadcast_tensor(
            labels, tuple(memory.labels.shape), torch.long, device
        )
        memory.init_memory(feats, labels)
        model.set_reweight()
        print_log(
            'ODC memory initialised by k-means: '
            f'{memory.num_classes} clusters',
            logger='current',
        )

    def after_train_iter(
        self, runner, batch_idx, data_batch=None, outputs=None
    ) -> None:
        model = getattr(runner.model, 'module', runner.model)
        step = runner.iter + 1
        changed = False
        if step % self.centroids_update_interval == 0:
            model.memory.update_centroids()
            changed = True
        if step % self.small_interval == 0:
            changed |= bool(model.memory.deal_with_small_clusters())
        if changed:
            model.set_reweight()
        runner.message_hub.update_scalar(
            'train/num_empty_clusters',
            int((model.memory.cluster_sizes() == 0).sum()),
        )
