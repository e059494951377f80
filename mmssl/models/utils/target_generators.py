"""Target networks for masked image modelling: checked and stand-in ones.

BEiT (v1: DALL-E tokenizer, v2: VQ-KD tokenizer), CAE (DALL-E), MILAN, EVA
and iTPN-CLIP (a CLIP ViT-B/16) regress or classify the output of a frozen,
pretrained *target* network. mmpretrain's ``DALLEEncoder``, ``VQKD`` and
``CLIPGenerator`` load that network's weights from a file or URL; if the file
is missing the failure is a deep ``torch.load`` traceback or, worse, silent
training against a random target. The ``Pretrained*Target`` classes below
are the same modules but check the checkpoint first and say what to provide,
and load it under mmssl's checkpoint policy (:mod:`mmssl.checkpoint`): a
file that pickles more than tensors is refused unless trusted.

``StandInCLIPTarget`` is a tiny, randomly initialised network with the
outputs of ``CLIPGenerator``; demo configs use it so that MILAN, EVA and
iTPN train on CPU without any download. It is *not* a meaningful target.
"""

import os.path as osp
from typing import Optional

import torch
from mmengine.utils import is_abs
from mmpretrain.models.selfsup.beit import VQKD
from mmpretrain.models.selfsup.cae import DALLEEncoder
from mmpretrain.models.selfsup.maskfeat import HOGGenerator
from mmpretrain.models.selfsup.milan import CLIPGenerator
from torch import nn

from mmssl.checkpoint import loading_policy
from mmssl.registry import MODELS

_DOWNLOADS = {
    'CLIP': (
        'https://download.openmmlab.com/mmselfsup/1.x/'
        'target_generator_ckpt/clip_vit_base_16.pth.tar'
    ),
    'VQ-KD': (
        'https://download.openmmlab.com/mmselfsup/1.x/'
        'target_generator_ckpt/vqkd_encoder.pth'
    ),
    'DALL-E': (
        'https://download.openmmlab.com/mmselfsup/1.x/'
        'target_generator_ckpt/dalle_encoder.pth'
    ),
}


def check_target_checkpoint(
    path: Optional[str], target: str, option: str
) -> str:
    """Return ``path`` if it is a URL or an existing file, else raise.

    Args:
        path (str, optional): Checkpoint path or URL from the config.
        target (str): Which target network ('CLIP', 'VQ-KD' or 'DALL-E').
        option (str): The config key that holds the path, for the message.

    Raises:
        FileNotFoundError: if ``path`` is None, empty or a missing file.
    """
    is_url = isinstance(path, str) and '://' in path
    if path and (is_url or osp.isfile(path)):
        return path
    where = 'is not set' if not path else f'"{path}" does not exist'
    if path and not is_abs(path):
        where += f' (relative to {osp.abspath(".")})'
    raise FileNotFoundError(
        f'This algorithm trains against a pretrained {target} target '
        f'network, but its checkpoint {where}. Download it (e.g. '
        f'{_DOWNLOADS[target]}) and pass '
        f'--cfg-options {option}=/path/to/file, or use the *_demo.py config '
        'whose stand-in target needs no file.'
    )


@MODELS.register_module()
class PretrainedCLIPTarget(CLIPGenerator):
    """``CLIPGenerator`` that checks ``tokenizer_path`` before loading.

    Used by MILAN (https://arxiv.org/abs/2208.06049), EVA
    (https://arxiv.org/abs/2211.07636) and iTPN
    (https://arxiv.org/abs/2211.12735).

    Args:
        tokenizer_path (str, optional): CLIP ViT-B/16 checkpoint (file or
            URL), as mmpretrain's ``CLIPGenerator`` expects.
    """

    def __init__(self, tokenizer_path: Optional[str] = None) -> None:
        check_target_checkpoint(
            tokenizer_path, 'CLIP', 'model.target_generator.tokenizer_path'
        )
        with loading_policy(source=tokenizer_path):
            super().__init__(tokenizer_path)


def _init_cfg_checkpoint(init_cfg) -> Optional[str]:
    if isinstance(init_cfg, dict) and init_cfg.get('type') == 'Pretrained':
        return init_cfg.get('checkpoint')
    return None


class _PolicyInitWeights:
    """``init_weights`` (which loads ``init_cfg``) under the load policy."""

    def init_weights(self) -> None:
        source = str(_init_cfg_checkpoint(self.init_cfg))
        with loading_policy(source=source):
            super().init_weights()


@MODELS.register_module()
class PretrainedVQKDTarget(_PolicyInitWeights, VQKD):
    """mmpretrain's ``VQKD`` tokenizer (BEiT v2,
    https://arxiv.org/abs/2208.06366) that insists on pretrained weights.

    ``init_cfg`` must be ``dict(type='Pretrained', checkpoint=PATH_OR_URL)``.
    """

    def __init__(
        self, *args, init_cfg: Optional[dict] = None, **kwargs
    ) -> None:
        check_target_checkpoint(
            _init_cfg_checkpoint(init_cfg),
            'VQ-KD',
            'model.target_generator.init_cfg.checkpoint',
        )
        super().__init__(*args, init_cfg=init_cfg, **kwargs)


@MODELS.register_module()
class PretrainedDALLETarget(_PolicyInitWeights, DALLEEncoder):
    """mmpretrain's ``DALLEEncoder`` tokenizer (BEiT v1,
    https://arxiv.org/abs/2106.08254; CAE, https://arxiv.org/abs/2202.03026)
    that insists on pretrained weights.

    ``init_cfg`` must be ``dict(type='Pretrained', checkpoint=PATH_OR_URL)``.
    """

    def __init__(
        self, *args, init_cfg: Optional[dict] = None, **kwargs
    ) -> None:
        check_target_checkpoint(
            _init_cfg_checkpoint(init_cfg),
            'DALL-E',
            'model.target_generator.init_cfg.checkpoint',
        )
        super().__init__(*args, init_cfg=init_cfg, **kwargs)


@MODELS.register_module()
class FloatHOGGenerator(HOGGenerator):
    """mmpretrain's ``HOGGenerator`` (MaskFeat,
    https://arxiv.org/abs/2112.09133) computed in float32 under CPU
    autocast.

    CPU autocast keeps the gradient norm in bfloat16, which
    ``HOGGenerator`` then adds into a float32 histogram: the bfloat16 CPU
    fallback of an AMP config stopped with ``scatter(): Expected
    self.dtype to be equal to src.dtype``. CUDA autocast is left as it is,
    so GPU runs compute what mmpretrain's class does. Same arguments.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """HOG features of ``x`` (B, 3, H, W), as ``HOGGenerator``."""
        with torch.autocast('cpu', enabled=False):
            return super().forward(x.float())


@MODELS.register_module()
class PatchHOGGenerator(FloatHOGGenerator):
    """:class:`FloatHOGGenerator` with one target per ``patch_size`` px
    token, for any image size.

    mmpretrain's ``HOGGenerator`` cuts the HOG map into a 14x14 token grid
    whatever the image size (224 px / 16 px patches), so a ViT with another
    grid (the 32 px demo: 8x8 tokens of 4 px) could only train on images
    upsampled to 14 patches a side. Here token ``(i, j)`` gets the
    histograms of the ``(patch_size / pool)**2`` cells inside its patch,
    flattened in the same order as mmpretrain (channel, bin, cell row,
    cell column); at 14 patches a side the output is mmpretrain's.

    Args:
        patch_size (int): The ViT's patch size in pixels; a multiple of
            ``pool``. Defaults to 16.
        **kwargs: ``nbins``, ``pool``, ``gaussian_window`` of
            ``HOGGenerator``.
    """

    def __init__(self, patch_size: int = 16, **kwargs) -> None:
        super().__init__(**kwargs)
        if patch_size <= 0 or patch_size % self.pool:
            raise ValueError(
                f'patch_size ({patch_size}) must be a positive multiple of '
                f'pool ({self.pool}): each token takes whole HOG cells'
            )
        self.patch_size = patch_size

    def _reshape(self, hog_feat: torch.Tensor) -> torch.Tensor:
        """(B, C, nbins, h, w) cells -> (B, tokens, cells per token)."""
        size = self.patch_size // self.pool
        if hog_feat.shape[-1] % size or hog_feat.shape[-2] % size:
            raise ValueError(
                f'a HOG map of {tuple(hog_feat.shape[-2:])} cells does not '
                f'split into tokens of {size}x{size} cells: the image side '
                f'must be a multiple of patch_size ({self.patch_size})'
            )
        hog_feat = hog_feat.flatten(1, 2).permute(0, 2, 3, 1)
        hog_feat = hog_feat.unfold(1, size, size).unfold(2, size, size)
        return hog_feat.flatten(1, 2).flatten(2)


@MODELS.register_module()
class StandInCLIPTarget(nn.Module):
    """A tiny random frozen network shaped like ``CLIPGenerator``'s output.

    Patch embedding, a class token and one single-head self-attention layer;
    returns the tokens and the attention map, as CLIP's last layer does. For
    CPU demos and tests only: the target carries no semantic information.

    Args:
        img_size (int): Input size in pixels. Defaults to 32.
        patch_size (int): Patch size; must match the student's.
            Defaults to 4.
        embed_dims (int): Width of the attention layer. Defaults to 32.
        out_dims (int): Channels of the returned features (the
            ``predict_feature_dim`` of the student's decoder).
            Defaults to 64.
        residual (bool): Add the attention output to the tokens before the
            projection, as a transformer layer does. Without it the random
            attention is almost uniform and every token of an image gets
            nearly the same target (cosine ~0.997 between the tokens of a
            64 px shapes image in 8 px patches): the student regresses one
            vector per image. With it, each token's target also carries a
            random projection of its own patch. Defaults to False (the
            digits demos' target).
    """

    def __init__(
        self,
        img_size: int = 32,
        patch_size: int = 4,
        embed_dims: int = 32,
        out_dims: int = 64,
        residual: bool = False,
    ) -> None:
        super().__init__()
        self.residual = residual
        num_patches = (img_size // patch_size) ** 2
        self.patch_embed = nn.Conv2d(3, embed_dims, patch_size, patch_size)
        self.cls_token = nn.Parameter(torch.randn(1, 1, embed_dims) * 0.02)
        self.pos_embed = nn.Parameter(
            torch.randn(1, num_patches + 1, embed_dims) * 0.02
        )
        self.qkv = nn.Linear(embed_dims, 3 * embed_dims)
        self.proj = nn.Linear(embed_dims, out_dims)
        self.requires_grad_(False)

    @torch.no_grad()
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Tokens (N, 1 + L, out_dims) and attention (N, 1 + L, 1 + L)."""
        tokens = self.patch_embed(x).flatten(2).transpose(1, 2)  # (N, L, C)
        cls = self.cls_token.expand(tokens.shape[0], -1, -1)
        tokens = torch.cat([cls, tokens], dim=1) + self.pos_embed
        q, k, v = self.qkv(tokens).chunk(3, dim=-1)
        attn = (q @ k.transpose(1, 2) * q.shape[-1] ** -0.5).softmax(-1)
        mixed = attn @ v
        if self.residual:
            mixed = mixed + tokens
        return self.proj(mixed), attn
