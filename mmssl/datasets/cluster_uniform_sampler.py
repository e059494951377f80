"""Sampling uniformly over clusters (DeepCluster)."""

import math
from typing import Iterator, Optional, Sized

import torch
from mmengine.dist import get_dist_info, sync_random_seed
from torch.utils.data import Sampler

from mmssl.registry import DATA_SAMPLERS


@DATA_SAMPLERS.register_module()
class ClusterUniformSampler(Sampler):
    """Draw the same number of images from every non-empty cluster.

    DeepCluster (https://arxiv.org/abs/1807.05520) samples images uniformly
    over its pseudo-label clusters so that one huge cluster cannot dominate.
    Until :meth:`set_labels` is called (by ``DeepClusterHook``) this is a
    plain shuffled sampler. Each epoch draws ``total = ceil(N / world) *
    world`` indices (with replacement inside clusters), shuffled with a seed
    shared by all ranks; rank r takes every world-th one from r.

    Args:
        dataset (Sized): The dataset.
        seed (int, optional): Base seed; a random seed shared by the ranks
            when None.
    """

    def __init__(self, dataset: Sized, seed: Optional[int] = None) -> None:
        self.dataset = dataset
        self.rank, self.world_size = get_dist_info()
        self.seed = sync_random_seed() if seed is None else seed
        self.epoch = 0
        self.num_samples = math.ceil(len(dataset) / self.world_size)
        self.total_size = self.num_samples * self.world_size
        self.labels: Optional[torch.Tensor] = None

    def set_labels(self, labels) -> None:
        """Use these (N, ) cluster labels from now on."""
        labels = torch.as_tensor(labels).long().cpu()
        if len(labels) != len(self.dataset):
            raise ValueError(
                f'{len(labels)} labels for a dataset of '
                f'{len(self.dataset)} images'
            )
        self.labels = labels

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        gen = torch.Generator()
        gen.manual_seed(self.seed + self.epoch)
        if self.labels is None:
            indices = torch.randperm(len(self.dataset), generator=gen)
        else:
            clusters = [
                torch.nonzero(self.labels == k).flatten()
                for k in torch.unique(self.labels)
            ]
            per_cluster = math.ceil(self.total_size / len(clusters))
            indices = torch.cat(
                [
                    members[
                        torch.randint(
                            len(members), (per_cluster,), generator=gen
                        )
                    ]
                    for members in clusters
                ]
            )
            indices = indices[torch.randperm(len(indices), generator=gen)]
        indices = indices.repeat(math.ceil(self.total_size / len(indices)))
        indices = indices[: self.total_size]
        return iter(indices[self.rank :: self.world_size].tolist())

    def __len__(self) -> int:
        return self.num_samples
