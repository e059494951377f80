"""NPID: instance discrimination with a memory bank (Wu et al., CVPR 2018)."""

import torch
import torch.nn.functional as F
from mmengine.dist import all_gather
from mmpretrain.models.selfsup import BaseSelfSupervisor
from mmpretrain.structures import DataSample

from mmssl.registry import MODELS


def sample_indices(
    data_samples: list[DataSample], num_samples: int
) -> torch.Tensor:
    """Dataset indices (B, ) of a batch, checked against the bank size."""
    try:
        idx = torch.tensor([int(s.sample_idx) for s in data_samples])
    except AttributeError as err:
        raise KeyError(
            "This algorithm needs each sample's dataset index; "
            'keep "sample_idx" in PackInputs(meta_keys=...).'
        ) from err
    if len(idx) and int(idx.max()) >= num_samples:
        raise ValueError(
            f'Sample index {int(idx.max())} does not fit a memory bank of '
            f'{num_samples} entries; set model.num_samples to the number of '
            'training images (len(train_dataloader.dataset)).'
        )
    return idx


def gather_cat(tensor: torch.Tensor) -> torch.Tensor:
    """Concatenate ``tensor`` from every rank (itself when not distributed)."""
    return torch.cat(all_gather(tensor.contiguous()))


@MODELS.register_module()
class NPID(BaseSelfSupervisor):
    """Non-parametric instance discrimination.

    "Unsupervised Feature Learning via Non-Parametric Instance
    Discrimination", https://arxiv.org/abs/1805.01978. Each image is its own
    class. A memory bank keeps an L2-normalised feature per training image;
    the loss is the softmax over the similarity to the image's own bank
    entry (the positive) and ``neg_num`` randomly drawn entries, divided by
    a temperature (0.07), i.e. the NCE-free approximation of the
    non-parametric softmax. Bank entries are updated with momentum after
    every step, on every rank (features are all-gathered).

    Args:
        backbone (dict): Backbone config.
        neck (dict): Projection to ``feat_dim`` channels.
        head (dict): ``ContrastiveHead`` config (temperature 0.07).
        num_samples (int): Training set size = memory bank length.
        feat_dim (int): Feature dimension. Defaults to 128.
        neg_num (int): Negatives drawn per image. Defaults to 4096.
        bank_momentum (float): ``new = normalize(m * old + (1 - m) * f)``.
            Defaults to 0.5.
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
        feat_dim: int = 128,
        neg_num: int = 4096,
        bank_momentum: float = 0.5,
        **kwargs,
    ) -> None:
        super().__init__(backbone=backbone, neck=neck, head=head, **kwargs)
        self.num_samples = num_samples
        self.neg_num = neg_num
        self.bank_momentum = bank_momentum
        # A buffer, so the bank is saved in checkpoints and survives resume.
        self.register_buffer(
            'memory_bank',
            F.normalize(torch.randn(num_samples, feat_dim), dim=1),
        )

    def loss(
        self,
        inputs: list[torch.Tensor],
        data_samples: list[DataSample],
        **kwargs,
    ) -> dict:
        img = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
        idx = sample_indices(data_samples, self.num_samples).to(img.device)
        feats = self.neck(self.backbone(img))[0]
        feats = F.normalize(feats, dim=1)  # (B, D)
        batch = feats.shape[0]

        neg_idx = torch.randint(
            self.num_samples, (batch * self.neg_num,), device=img.device
        )
        pos_feat = self.memory_bank[idx]  # (B, D)
        neg_feat = self.memory_bank[neg_idx].view(batch, self.neg_num, -1)
        pos = (feats * pos_feat).sum(dim=1, keepdim=True)  # (B, 1)
        neg = torch.bmm(neg_feat, feats.unsqueeze(2)).squeeze(2)  # (B, K)
        loss = self.head.loss(pos, neg)

        self.update_memory_bank(idx, feats.detach())
        return dict(loss=loss)

    @torch.no_grad()
    def update_memory_bank(
        self, idx: torch.Tensor, feats: torch.Tensor
    ) -> None:
        """Momentum-update the bank rows ``idx`` with the (B, D) ``feats``
        of every rank."""
        idx, feats = gather_cat(idx), gather_cat(feats)
        old = self.memory_bank[idx]
        new = self.bank_momentum * old + (1 - self.bank_momentum) * feats
        self.memory_bank[idx] = F.normalize(new, dim=1)
