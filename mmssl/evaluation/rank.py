"""Label-free quality of features: RankMe and the spread of the features.

Without labels there is no kNN or probe figure, but the features of a
fixed set of images still tell whether pretraining went somewhere:

* **RankMe** (Garrido et al., "RankMe: Assessing the Downstream
  Performance of Pretrained Self-Supervised Representations by Their
  Rank", ICML 2023, https://arxiv.org/abs/2210.02885) is the effective
  rank of the (N, D) feature matrix Z: with the singular values
  s_1 >= ... >= s_K of Z (K = min(N, D)) and p_k = s_k / sum(s) + eps,
  ``RankMe = exp(-sum_k p_k log p_k)``. It lies between 1 (every image
  on one direction: collapse) and K (all directions used equally). The
  paper shows that, for one method and backbone, a higher RankMe goes
  with a better linear-probe accuracy.
* **Spread**: the standard deviation of the L2-normalised features over
  the images, averaged over the D dimensions and multiplied by sqrt(D)
  (the collapse check of SimSiam, Chen and He, CVPR 2021,
  https://arxiv.org/abs/2011.10566): about 1 when the features point in
  all directions, 0 when every image has the same feature.

Both read only the features, so they work on any folder of images, the
training folder included.
"""

from typing import Dict, List, Optional

import numpy as np
import torch

#: RankMe's epsilon (the paper's value): keeps log p finite.
EPS = 1e-7


def singular_values(feats: torch.Tensor) -> torch.Tensor:
    """Singular values of the (N, D) feature matrix, largest first,
    computed in float64."""
    if feats.dim() != 2:
        raise ValueError(
            f'expected one feature vector per image, (N, D), got shape '
            f'{tuple(feats.shape)}'
        )
    if feats.shape[0] < 2:
        raise ValueError(
            f'RankMe needs the features of at least 2 images, got '
            f'{feats.shape[0]}; give a folder with more images.'
        )
    return torch.linalg.svdvals(feats.detach().double().cpu())


def rankme(feats: torch.Tensor, eps: float = EPS) -> float:
    """RankMe of (N, D) features: exp of the entropy of the normalised
    singular values (Garrido et al. 2023, eq. 1). Not centred, as in the
    paper."""
    return rankme_of_spectrum(singular_values(feats), eps)


def rankme_of_spectrum(s: torch.Tensor, eps: float = EPS) -> float:
    """RankMe from the singular values ``s`` of the features."""
    if not bool(torch.isfinite(s).all()):
        raise ValueError('the features hold NaN or inf values')
    total = s.sum()
    if total <= 0:  # every feature is zero: nothing is spanned
        return 1.0
    p = s / total + eps
    return float(torch.exp(-(p * p.log()).sum()))


def spread(feats: torch.Tensor) -> float:
    """Standard deviation over the images of the L2-normalised features,
    averaged over the D dimensions, times sqrt(D) (SimSiam's collapse
    check): 0 for identical features, about 1 for features spread over
    the sphere."""
    normed = torch.nn.functional.normalize(feats.double(), dim=1)
    std = normed.std(dim=0, unbiased=False)
    return float(std.mean() * feats.shape[1] ** 0.5)


def rank_metrics(feats: torch.Tensor) -> Dict[str, float]:
    """``rankme``, ``rankme_fraction`` (RankMe / min(N, D)), ``spread``,
    ``images`` and ``dim`` of (N, D) features."""
    n, d = feats.shape if feats.dim() == 2 else (0, 0)
    value = rankme(feats)
    return dict(
        rankme=value,
        rankme_fraction=value / min(n, d),
        spread=spread(feats),
        images=float(n),
        dim=float(d),
    )


def evenly_spaced(total: int, wanted: Optional[int]) -> List[int]:
    """``wanted`` indices spread evenly over ``range(total)``, first and
    last included (all of them when ``wanted`` is None or not smaller):
    the same subset on every call, whatever the sorting of sub-folders."""
    if wanted is None or wanted >= total:
        return list(range(total))
    return np.linspace(0, total - 1, wanted).round().astype(int).tolist()
