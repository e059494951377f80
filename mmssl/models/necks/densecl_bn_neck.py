"""DenseCL's neck with BatchNorm in its hidden layers."""

from mmpretrain.models.necks import DenseCLNeck
from torch import nn

from mmssl.registry import MODELS


@MODELS.register_module()
class DenseCLBNNeck(DenseCLNeck):
    """mmpretrain's ``DenseCLNeck`` with a BatchNorm after each hidden layer.

    DenseCL (Wang et al. 2021, https://arxiv.org/abs/2011.09157) projects
    the pooled feature with fc-ReLU-fc and every position of the feature
    map with 1x1conv-ReLU-1x1conv, without normalisation, as MoCo v2 does.
    From a random ResNet those heads give every image nearly the same
    vector (the pooled features are all positive after the last ReLU):
    on the demo digits the cosine between two images' projections is about
    0.93 at initialisation (measured with MoCo v2's identical fc-ReLU-fc),
    so the contrastive softmax starts almost uniform and a short run
    barely leaves that point. A BatchNorm after the hidden layer
    (fc-BN-ReLU-fc and 1x1conv-BN-ReLU-1x1conv, the projector of SimCLR,
    BYOL and MoCo v3) centres the hidden units over the batch; with a
    BatchNorm on the outputs too (``with_last_bn=True``, as the demo and
    ``NonLinearNeck``'s default) the projections start nearly orthogonal
    (cosine about 0 +- 0.2, measured with ``NonLinearNeck``). The
    outputs and their shapes are those of ``DenseCLNeck``. The DenseCL
    demo uses it (configs/densecl/README.md).

    Args:
        in_channels (int): Backbone channels.
        hid_channels (int): Hidden channels of both heads.
        out_channels (int): Output channels of both heads.
        num_grid (int, optional): Pool the dense map to ``num_grid`` x
            ``num_grid`` first; None keeps the backbone's grid.
        with_last_bn (bool): Also a BatchNorm on both outputs (as
            ``NonLinearNeck``'s default). Defaults to False.
        init_cfg (dict or list[dict], optional): Initialisation config.
    """

    def __init__(
        self,
        in_channels: int,
        hid_channels: int,
        out_channels: int,
        num_grid=None,
        with_last_bn: bool = False,
        init_cfg=None,
    ) -> None:
        super().__init__(
            in_channels, hid_channels, out_channels, num_grid, init_cfg
        )
        self.mlp = nn.Sequential(
            nn.Linear(in_channels, hid_channels),
            nn.BatchNorm1d(hid_channels),
            nn.ReLU(inplace=True),
            nn.Linear(hid_channels, out_channels),
            *([nn.BatchNorm1d(out_channels)] if with_last_bn else []),
        )
        self.mlp2 = nn.Sequential(
            nn.Conv2d(in_channels, hid_channels, 1),
            nn.BatchNorm2d(hid_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(hid_channels, out_channels, 1),
            *([nn.BatchNorm2d(out_channels)] if with_last_bn else []),
        )
