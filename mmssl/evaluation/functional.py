"""Weighted k-nearest-neighbour classification on features.

The weighted kNN of Wu et al., "Unsupervised Feature Learning via
Non-Parametric Instance Discrimination" (CVPR 2018,
https://arxiv.org/abs/1805.01978), as used to evaluate DINO
(https://arxiv.org/abs/2104.14294): features are L2-normalised, the k most
cosine-similar bank samples vote for their class with weight
``exp(similarity / T)``.
"""

import torch
import torch.nn.functional as F


def weighted_knn_scores(
    query: torch.Tensor,
    bank: torch.Tensor,
    bank_labels: torch.Tensor,
    num_classes: int,
    k: int = 20,
    temperature: float = 0.07,
    chunk_size: int = 1024,
) -> torch.Tensor:
    """Class scores of each query from its k nearest bank samples.

    Args:
        query (torch.Tensor): Query features, (Q, C).
        bank (torch.Tensor): Bank features, (N, C).
        bank_labels (torch.Tensor): Integer labels of the bank, (N, ).
        num_classes (int): Number of classes.
        k (int): Number of neighbours; clipped to N. Defaults to 20.
        temperature (float): Softmax-like temperature of the votes.
            Defaults to 0.07.
        chunk_size (int): Queries processed at once, to bound memory.

    Returns:
        torch.Tensor: Scores, (Q, num_classes); higher is more likely.
    """
    if bank.shape[0] == 0:
        raise ValueError(
            'The kNN feature bank is empty: the labelled train '
            'split gave no samples.'
        )
    if temperature <= 0:
        raise ValueError(f'temperature must be > 0, got {temperature}')
    k = min(k, bank.shape[0])
    bank = F.normalize(bank.float(), dim=1)
    query = F.normalize(query.float(), dim=1)
    bank_labels = bank_labels.long()
    scores = []
    for start in range(0, query.shape[0], chunk_size):
        q = query[start : start + chunk_size]
        sim = q @ bank.T  # (q, N)
        top_sim, top_idx = sim.topk(k, dim=1)  # (q, k)
        weights = (top_sim / temperature).exp()
        votes = torch.zeros(q.shape[0], num_classes, dtype=weights.dtype)
        votes.scatter_add_(1, bank_labels[top_idx], weights)
        scores.append(votes)
    return torch.cat(scores) if scores else torch.zeros(0, num_classes)


def topk_accuracy(
    scores: torch.Tensor, labels: torch.Tensor, topk: tuple = (1, 5)
) -> dict:
    """Top-k accuracy in percent for each k (clipped to the class count)."""
    result = {}
    if scores.shape[0] == 0:
        raise ValueError('No query samples to evaluate.')
    for k in topk:
        kk = min(k, scores.shape[1])
        pred = scores.topk(kk, dim=1).indices  # (Q, kk)
        correct = (pred == labels.view(-1, 1)).any(dim=1).float()
        result[f'top{k}'] = correct.mean().item() * 100.0
    return result
