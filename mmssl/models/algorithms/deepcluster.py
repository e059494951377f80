"""DeepCluster (Caron et al., ECCV 2018)."""

import torch
from mmpretrain.models.selfsup import BaseSelfSupervisor
from mmpretrain.structures import DataSample

from mmssl.registry import MODELS

from .npid import sample_indices


@MODELS.register_module()
class DeepCluster(BaseSelfSupervisor):
    """Classify images into k-means clusters of their own features.

    "Deep Clustering for Unsupervised Learning of Visual Features",
    https://arxiv.org/abs/1807.05520. :class:`DeepClusterHook` clusters the
    features of the whole training set every epoch and stores the
    assignments with :meth:`set_pseudo_labels`, which also re-initialises
    the classifier; this class trains backbone, neck and classifier with
    cross-entropy against those pseudo-labels. ``ClusterUniformSampler``
    draws images uniformly over clusters.

    Args:
        backbone (dict): Backbone config.
        neck (dict): Neck config (e.g. ``AvgPool2dNeck``), or None.
        head (dict): :class:`PretextClsHead` with ``num_classes`` outputs.
        num_samples (int): Training set size (length of the label buffer).
        num_classes (int): Number of clusters.
    """

    #: ``num_samples`` must equal the training set's size (checked
    #: before training by ``check_memory_size``)
    sized_by_dataset = True

    def __init__(
        self,
        backbone: dict,
        head: dict,
        num_samples: int,
        num_classes: int,
        neck=None,
        **kwargs,
    ) -> None:
        super().__init__(backbone=backbone, neck=neck, head=head, **kwargs)
        self.num_samples = num_samples
        self.num_classes = num_classes
        # A buffer: saved in checkpoints, so resumed runs keep their labels.
        self.register_buffer(
            'pseudo_labels', torch.zeros(num_samples, dtype=torch.long)
        )

    @torch.no_grad()
    def set_pseudo_labels(self, labels: torch.Tensor) -> None:
        """Store new (N, ) cluster labels and re-initialise the classifier
        (the cluster ids of two clusterings are unrelated)."""
        if labels.shape != self.pseudo_labels.shape:
            raise ValueError(
                f'Got {tuple(labels.shape)} labels for a training set of '
                f'{self.num_samples}; set model.num_samples to '
                'len(train_dataloader.dataset).'
            )
        self.pseudo_labels.copy_(labels)
        self.head.reset_parameters()

    def loss(
        self,
        inputs: list[torch.Tensor],
        data_samples: list[DataSample],
        **kwargs,
    ) -> dict:
        img = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
        idx = sample_indices(data_samples, self.num_samples)
        labels = self.pseudo_labels[idx.to(self.pseudo_labels.device)]
        feats = self.backbone(img)
        if self.with_neck:
            feats = self.neck(feats)
        return dict(loss=self.head.loss(feats, labels))
