"""mmssl 3D backbones -> MONAI's networks, key for key.

* :func:`mmssl_to_monai_swinvit`: :class:`SwinViT3D` weights (``swinViT.``
  + MONAI's own keys) -> ``SwinUNETR(...).swinViT``.
* :func:`mmssl_to_monai_vit`: :class:`VisionTransformer3D` weights ->
  ``monai.networks.nets.ViT(..., classification=False)``, the encoder
  UNETR uses. That ViT has no CLS token, no register tokens and no
  LayerScale: the CLS token and its position are dropped (the patch
  tokens are all MONAI's ViT has), LayerScale is folded into the output
  projections (``gamma * (W x + b)`` = ``(gamma W) x + gamma b``), and a
  model with register tokens or a SwiGLU FFN is refused.

Pure tensor maps (no MONAI import), so they are testable without it.
"""

import re
from typing import Dict, Mapping

import torch

StateDict = Dict[str, torch.Tensor]

#: Key only the 3D ViT has (behind its backbone prefix).
VIT3D_MARKER = 'patch_embed.projection.weight'
#: Prefix of MONAI's SwinTransformer inside :class:`SwinViT3D`.
SWIN_PREFIX = 'swinViT.'

_VIT_BLOCK = {
    'ln1': 'norm1',
    'ln2': 'norm2',
    'attn.qkv': 'attn.qkv',
    'attn.proj': 'attn.out_proj',
    'ffn.layers.0.0': 'mlp.linear1',
    'ffn.layers.1': 'mlp.linear2',
}
#: LayerScale of a block -> the Linear whose output it scales.
_GAMMA = {'attn.gamma1': 'attn.proj', 'ffn.gamma2': 'ffn.layers.1'}
_GAMMA_KEY = r'layers\.(\d+)\.(attn\.gamma1|ffn\.gamma2)\.weight'
_DROPPED = ('cls_token', 'mask_token')


def mmssl_to_monai_swinvit(state: Mapping[str, torch.Tensor]) -> StateDict:
    """Strip ``swinViT.`` from a :class:`SwinViT3D` backbone state dict.

    Raises:
        ValueError: A key outside ``swinViT.`` (not this backbone).
    """
    out = {}
    for k, v in state.items():
        if not k.startswith(SWIN_PREFIX):
            raise ValueError(
                f'{k!r} is not a SwinViT3D key (expected the prefix '
                f'{SWIN_PREFIX!r}); pass --src-prefix to pick the backbone.'
            )
        out[k[len(SWIN_PREFIX) :]] = v.detach().clone()
    return out


def _check_vit(state: Mapping[str, torch.Tensor]) -> None:
    regs = state.get('register_tokens')
    if regs is not None and regs.numel():
        raise ValueError(
            f"This ViT has {regs.shape[1]} register tokens; MONAI's ViT "
            'has none, so its patch features would change. Export a model '
            'trained with num_register_tokens=0.'
        )
    if any('.w12.' in k or 'swiglu' in k for k in state):
        raise ValueError("MONAI's ViT has no SwiGLU FFN; cannot export.")
    if VIT3D_MARKER not in state or state[VIT3D_MARKER].dim() != 5:
        raise ValueError(
            f'No 3D patch embedding {VIT3D_MARKER!r} (Conv3d weight); '
            'not a VisionTransformer3D state dict.'
        )


def _block_key(rest: str) -> str:
    for src, dst in _VIT_BLOCK.items():
        if rest.startswith(src + '.'):
            return dst + rest[len(src) :]
    raise ValueError(f'Unknown ViT block key {rest!r}.')


def mmssl_to_monai_vit(state: Mapping[str, torch.Tensor]) -> StateDict:
    """Map a :class:`VisionTransformer3D` state dict to MONAI's ViT.

    Build the MONAI model with the same ``img_size``, ``patch_size``,
    ``hidden_size`` (embed dims), ``mlp_dim``, ``num_layers``,
    ``num_heads``, ``qkv_bias`` (True when the mmssl model has qkv biases,
    its default) and ``classification=False``; then ``load_state_dict(out,
    strict=True)`` works.
    """
    _check_vit(state)
    state = {k: v.detach().clone() for k, v in state.items()}
    gammas = {}
    for k in list(state):
        m = re.fullmatch(_GAMMA_KEY, k)
        if m:
            gammas[(m.group(1), _GAMMA[m.group(2)])] = state.pop(k)
    out: StateDict = {}
    embed = state['pos_embed'].shape[-1]
    for k, v in state.items():
        if k in _DROPPED or k == 'register_tokens':
            continue
        if k == 'pos_embed':
            out['patch_embedding.position_embeddings'] = v[:, 1:].contiguous()
        elif k.startswith('patch_embed.projection.'):
            name = k.rsplit('.', 1)[1]
            out[f'patch_embedding.patch_embeddings.{name}'] = v
        elif k.startswith('ln1.'):
            out['norm.' + k[len('ln1.') :]] = v
        elif k.startswith('layers.'):
            _, idx, rest = k.split('.', 2)
            param = rest.rsplit('.', 1)
            gamma = gammas.get((idx, param[0]))
            if gamma is not None:
                v = v * (gamma[:, None] if v.dim() == 2 else gamma)
            out[f'blocks.{idx}.{_block_key(rest)}'] = v
        else:
            raise ValueError(f'Unexpected key {k!r} in a 3D ViT state dict.')
    blocks = {k.split('.')[1] for k in out if k.startswith('blocks.')}
    for idx in blocks:  # MONAI keeps an (unused) cross-attention norm
        out[f'blocks.{idx}.norm_cross_attn.weight'] = torch.ones(embed)
        out[f'blocks.{idx}.norm_cross_attn.bias'] = torch.zeros(embed)
    return out


__all__ = [
    'SWIN_PREFIX',
    'VIT3D_MARKER',
    'mmssl_to_monai_swinvit',
    'mmssl_to_monai_vit',
]
