"""ODC: online deep clustering (Zhan et al., CVPR 2020)."""

from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F
from mmpretrain.models.selfsup import BaseSelfSupervisor
from mmpretrain.structures import DataSample
from torch import nn

from mmssl.registry import MODELS

from .npid import gather_cat, sample_indices


class ODCMemory(nn.Module):
    """Sample memory (features + labels) and centroid memory of ODC.

    Every tensor is a buffer, so the memory is saved in checkpoints and
    restored on resume. Updates all-gather the batch of every rank, so all
    ranks hold the same memory.

    Args:
        num_samples (int): Training set size.
        feat_dim (int): Feature dimension.
        num_classes (int): Number of clusters.
        momentum (float): Feature update ``normalize(m * old + (1 - m) *
            new)``. Defaults to 0.5.
        min_cluster (int): Clusters smaller than this are dissolved.
            Defaults to 20.
    """

    def __init__(
        self,
        num_samples: int,
        feat_dim: int,
        num_classes: int,
        momentum: float = 0.5,
        min_cluster: int = 20,
    ) -> None:
        super().__init__()
        self.num_classes = num_classes
        self.momentum = momentum
        self.min_cluster = min_cluster
        self.register_buffer('features', torch.zeros(num_samples, feat_dim))
        self.register_buffer(
            'labels', torch.zeros(num_samples, dtype=torch.long)
        )
        self.register_buffer('centroids', torch.zeros(num_classes, feat_dim))
        self.register_buffer('initialized', torch.tensor(0))

    @torch.no_grad()
    def init_memory(self, feats: torch.Tensor, labels: torch.Tensor) -> None:
        """Fill the memory from (N, D) features and (N, ) labels."""
        self.features.copy_(F.normalize(feats, dim=1))
        self.labels.copy_(labels)
        self.update_centroids()
        self.initialized.fill_(1)

    def cluster_sizes(self) -> torch.Tensor:
        return torch.bincount(self.labels, minlength=self.num_classes)

    @torch.no_grad()
    def update_centroids(self) -> None:
        """Centroid k = normalised mean of the features labelled k
        (empty clusters keep their centroid)."""
        sums = torch.zeros_like(self.centroids).index_add_(
            0, self.labels, self.features
        )
        sizes = self.cluster_sizes()
        nonempty = sizes > 0
        self.centroids[nonempty] = F.normalize(sums[nonempty], dim=1)

    @torch.no_grad()
    def update_samples(
        self, idx: torch.Tensor, feats: torch.Tensor
    ) -> torch.Tensor:
        """Momentum-update rows ``idx`` with (B, D) ``feats`` (of every
        rank) and re-assign their labels to the nearest centroid.

        Returns:
            Tensor: the fraction of those samples whose label changed.
        """
        idx = gather_cat(idx.to(self.features.device))
        feats = gather_cat(F.normalize(feats, dim=1))
        new = F.normalize(
            self.momentum * self.features[idx] + (1 - self.momentum) * feats,
            dim=1,
        )
        self.features[idx] = new
        new_labels = (new @ self.centroids.t()).argmax(dim=1)
        change = (new_labels != self.labels[idx]).float().mean()
        self.labels[idx] = new_labels
        return change

    @torch.no_grad()
    def deal_with_small_clusters(self, seed: int = 0) -> list[int]:
        """Dissolve clusters below ``min_cluster`` samples.

        Their samples move to the nearest remaining centroid; each freed
        cluster id is then reused by splitting the currently largest
        cluster in two with 2-means. Deterministic, so all ranks agree.

        Returns:
            list[int]: the cluster ids that were refilled.
        """
        from sklearn.cluster import KMeans

        sizes = self.cluster_sizes()
        small = [int(k) for k in torch.nonzero(sizes < self.min_cluster)]
        if not small or len(small) == self.num_classes:
            return []
        valid = torch.ones(
            self.num_classes, dtype=torch.bool, device=sizes.device
        )
        valid[small] = False
        for k in small:
            members = torch.nonzero(self.labels == k).flatten()
            if len(members):
                sim = self.features[members] @ self.centroids.t()
                sim[:, ~valid] = -2
                self.labels[members] = sim.argmax(dim=1)
        for k in small:
            sizes = self.cluster_sizes()
            largest = int(sizes.argmax())
            members = torch.nonzero(self.labels == largest).flatten()
            if len(members) < 2:
                break
            halves = KMeans(2, n_init=1, random_state=seed).fit_predict(
                self.features[members].cpu().double().numpy()
            )
            if halves.min() == halves.max():  # identical points: split
                halves = np.arange(len(members)) % 2
            moved = members[torch.from_numpy(halves).to(members.device) == 1]
            self.labels[moved] = k
            valid[k] = True
        self.update_centroids()
        return small


@MODELS.register_module()
class ODC(BaseSelfSupervisor):
    """Online deep clustering.

    "Online Deep Clustering for Unsupervised Representation Learning",
    https://arxiv.org/abs/2006.10645. Pseudo-labels come from a sample
    memory that is updated every iteration (momentum features, label =
    nearest centroid) instead of an offline k-means every epoch; the
    classifier is trained with cross-entropy weighted by inverse cluster
    size (``size ** -reweight_pow``). :class:`ODCHook` initialises the
    memory by k-means and maintains the centroids.

    Args:
        backbone (dict): Backbone config.
        neck (dict): Projection to ``feat_dim`` channels (its first output
            is used).
        head (dict): :class:`PretextClsHead` with ``num_classes`` outputs
            and ``in_channels=feat_dim``.
        num_samples (int): Training set size.
        num_classes (int): Number of clusters.
        feat_dim (int): Dimension of the memory features.
        memory_momentum (float): Defaults to 0.5.
        min_cluster (int): Defaults to 20.
        reweight_pow (float): Defaults to 0.5.
    """

    #: ``num_samples`` must equal the training set's size (checked
    #: before training by ``check_memory_size``)
    sized_by_dataset = True

    def __init__(
        self,
        backbone: dict,
        neck: dict,
        head: dict,
        num_samples: int,
        num_classes: int,
        feat_dim: int,
        memory_momentum: float = 0.5,
        min_cluster: int = 20,
        reweight_pow: float = 0.5,
        **kwargs,
    ) -> None:
        super().__init__(backbone=backbone, neck=neck, head=head, **kwargs)
        self.num_samples = num_samples
        self.num_classes = num_classes
        self.reweight_pow = reweight_pow
        self.memory = ODCMemory(
            num_samples, feat_dim, num_classes, memory_momentum, min_cluster
        )
        self.register_buffer('class_weight', torch.ones(num_classes))

    @torch.no_grad()
    def set_reweight(self, labels: Optional[torch.Tensor] = None) -> None:
        """Class weights ``size ** -pow`` (0 for empty clusters), scaled so
        that they average 1 over the non-empty clusters."""
        if labels is None:
            labels = self.memory.labels
        sizes = torch.bincount(labels, minlength=self.num_classes).float()
        weight = torch.where(
            sizes > 0,
            sizes.clamp(min=1) ** -self.reweight_pow,
            torch.zeros_like(sizes),
        )
        weight = weight / weight.sum() * (sizes > 0).sum()
        self.class_weight.copy_(weight)

    def loss(
        self,
        inputs: list[torch.Tensor],
        data_samples: list[DataSample],
        **kwargs,
    ) -> dict:
        img = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
        if not bool(self.memory.initialized):
            raise RuntimeError(
                'ODC memory is empty; add ODCHook to '
                'custom_hooks (it runs k-means first).'
            )
        idx = sample_indices(data_samples, self.num_samples).to(img.device)
        feats = self.neck(self.backbone(img))[0]  # (B, D)
        labels = self.memory.labels[idx]
        loss = self.head.loss(feats, labels, class_weight=self.class_weight)
        change = self.memory.update_samples(idx, feats.detach())
        return dict(loss=loss, change_ratio=change)
