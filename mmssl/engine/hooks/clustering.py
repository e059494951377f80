"""Shared pieces of the clustering hooks (DeepCluster, ODC)."""

import copy
from typing import Callable, Optional

import numpy as np
import torch
import torch.nn.functional as F
from mmengine.dist import broadcast, collect_results, get_rank
from mmengine.runner import Runner

from mmssl.engine.runner.feature_extraction import extract_features


def neck_features(
    model: torch.nn.Module, inputs: torch.Tensor
) -> torch.Tensor:
    """L2-normalised neck output (B, D) of a self-supervisor."""
    feats = model.backbone(inputs)
    if getattr(model, 'with_neck', False):
        feats = model.neck(feats)
    feats = feats[0] if isinstance(feats, (list, tuple)) else feats
    if feats.dim() == 4:
        feats = feats.mean(dim=(2, 3))
    return F.normalize(feats.flatten(1), dim=1)


def extract_train_features(
    runner: Runner,
    pipeline: list,
    batch_size: int,
    num_workers: int,
    feature_fn: Optional[Callable] = None,
) -> Optional[torch.Tensor]:
    """Features (N, D) of the whole training set, in dataset order.

    The training dataset config is rebuilt with ``pipeline`` (no random
    augmentation), split over the ranks, and the per-sample features are
    collected on rank 0. Other ranks get None.
    """
    dataset_cfg = copy.deepcopy(runner.cfg.train_dataloader['dataset'])
    inner = dataset_cfg
    while 'dataset' in inner:
        inner = inner['dataset']
    inner['pipeline'] = pipeline
    loader = runner.build_dataloader(
        dict(
            batch_size=batch_size,
            num_workers=num_workers,
            dataset=dataset_cfg,
            sampler=dict(type='DefaultSampler', shuffle=False),
            collate_fn=dict(type='default_collate'),
        )
    )
    feats, _ = extract_features(
        runner.model, loader, feature_fn, desc='features for clustering'
    )
    size = len(loader.dataset)
    gathered = collect_results(list(feats), size, device='cpu')
    if get_rank() != 0:
        return None
    return torch.stack(gathered)


def kmeans(
    feats: torch.Tensor,
    num_clusters: int,
    seed: int = 0,
    max_iter: int = 50,
    pca_dim: Optional[int] = None,
) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn k-means on L2-normalised (optionally PCA'd) features.

    Returns:
        tuple: labels (N, ) int64 and centroids (K, D') float32.
    """
    from sklearn.cluster import KMeans
    from sklearn.decomposition import PCA

    if num_clusters > len(feats):
        raise ValueError(
            f'Cannot make {num_clusters} clusters of '
            f'{len(feats)} images; lower num_classes.'
        )
    x = feats.double().numpy()
    if pca_dim is not None and x.shape[1] > pca_dim:
        x = PCA(pca_dim, whiten=True, random_state=seed).fit_transform(x)
    x = x / np.linalg.norm(x, axis=1, keepdims=True).clip(min=1e-12)
    km = KMeans(
        num_clusters, n_init=1, max_iter=max_iter, random_state=seed
    ).fit(x)
    return km.labels_.astype(np.int64), km.cluster_centers_.astype(np.float32)


def broadcast_tensor(
    tensor: Optional[torch.Tensor], shape: tuple, dtype: torch.dtype, device
) -> torch.Tensor:
    """Send rank 0's ``tensor`` to every rank (a no-op when alone)."""
    if tensor is None:
        tensor = torch.zeros(shape, dtype=dtype)
    tensor = tensor.to(device=device, dtype=dtype).contiguous()
    broadcast(tensor, src=0)
    return tensor
