# Copyright (c) mmssl contributors. All rights reserved.
"""BEiT layouts: the shared relative-position bias -> one table per
block, and the export to mmsegmentation's ``BEiT``.

BEiT pretraining (Bao et al., 2021, https://arxiv.org/abs/2106.08254)
shares one relative-position bias table between all blocks
(``rel_pos_bias.relative_position_bias_table``); its fine-tuning backbone
gives each block its own, initialised from the shared one
(``layers.N.attn.relative_position_bias_table``). mmpretrain's ``BEiTViT``
expands the table in a load hook only when the keys carry no prefix, so a
load into a whole classifier left all of them at their initial values.
"""

from typing import Callable, Dict, Iterable, Mapping

SHARED = 'rel_pos_bias.'
LEAVES = ('relative_position_bias_table', 'relative_position_index')


def expand_shared_rel_pos_bias(
    state: Mapping,
    own: Iterable[str],
    names: Callable[[str], Iterable[str]] = lambda key: (key,),
) -> Dict:
    """``state`` with each shared table (and index) copied into every
    block the model has under the same parent, instead of the shared key.

    Args:
        state (Mapping): Checkpoint weights.
        own (Iterable[str]): The model's keys.
        names (callable): The model names a checkpoint key may stand for
            (prefix stripping); the key itself by default.

    Returns:
        dict: A new dict; unchanged when the model has the shared table
        itself or no per-block table.
    """
    own = set(own)
    out = {}
    for key, value in state.items():
        leaf = key.rsplit('.', 1)[-1]
        targets = []
        if leaf in LEAVES and key.endswith(SHARED + leaf):
            for name in names(key):
                base = name[: -len(SHARED + leaf)]
                if name in own:
                    break
                targets = sorted(
                    k
                    for k in own
                    if k.startswith(base + 'layers.')
                    and k.endswith('.attn.' + leaf)
                    and k.count('.') == base.count('.') + 3
                )
                if targets:
                    break
        if targets:
            out.update((t, value.clone()) for t in targets)
        else:
            out[key] = value
    return out


_MMSEG_BLOCK = (
    'gamma_1',
    'gamma_2',
    'ln1.weight',
    'ln1.bias',
    'attn.q_bias',
    'attn.v_bias',
    'attn.relative_position_bias_table',
    'attn.qkv.weight',
    'attn.proj.weight',
    'attn.proj.bias',
    'ln2.weight',
    'ln2.bias',
    'ffn.layers.0.0.weight',
    'ffn.layers.0.0.bias',
    'ffn.layers.1.weight',
    'ffn.layers.1.bias',
)


def mmseg_beit_keys(num_layers: int, final_norm: bool) -> list:
    """The keys mmsegmentation's ``BEiT`` backbone loads (its
    ``relative_position_index`` buffers are rebuilt, not loaded)."""
    keys = ['cls_token', 'patch_embed.projection.weight']
    keys.append('patch_embed.projection.bias')
    for i in range(num_layers):
        keys += [f'layers.{i}.{k}' for k in _MMSEG_BLOCK]
    return keys + (['ln1.weight', 'ln1.bias'] if final_norm else [])


def beit_to_mmseg(state_dict: Mapping) -> tuple:
    """An mmpretrain BEiT backbone (pretraining or fine-tune layout) ->
    mmsegmentation's ``BEiT`` (``mmseg/models/backbones/beit.py``).

    The names are mmpretrain's already; the shared relative-position table
    goes into every block, ``mask_token`` (pretraining only) and the index
    buffers are dropped.

    Returns:
        tuple: The weights and the backbone options they need
        (``embed_dims``, ``num_layers``, ``num_heads``, ``patch_size``,
        ``img_size``, ``mlp_ratio``, ``qv_bias``, ``final_norm``).

    Raises:
        ValueError: An absolute position embedding (mmseg's BEiT has none).
        KeyError: A key that mmseg's layout lacks, or one it misses.
    """
    if 'pos_embed' in state_dict:
        raise ValueError(
            'pos_embed: this BEiT has an absolute position embedding, which '
            "mmsegmentation's BEiT cannot hold (use_abs_pos_emb=False)."
        )
    layers = {int(k.split('.')[1]) for k in state_dict if k[:7] == 'layers.'}
    tables = [f'layers.{i}.attn.relative_position_bias_table' for i in layers]
    state = expand_shared_rel_pos_bias(state_dict, tables)
    out = {
        k: v
        for k, v in state.items()
        if k != 'mask_token' and not k.endswith('relative_position_index')
    }
    final_norm = 'ln1.weight' in out
    expected = mmseg_beit_keys(len(layers), final_norm)
    missing = [k for k in expected if k not in out]
    unexpected = sorted(set(out) - set(expected))
    if missing or unexpected:
        raise KeyError(
            "The BEiT backbone does not fit mmsegmentation's BEiT: missing "
            f'{missing[:10]}, unexpected {unexpected[:10]}.'
        )
    patch = out['patch_embed.projection.weight']  # (C, 3, p, p)
    table = out['layers.0.attn.relative_position_bias_table']  # (L, heads)
    window = (round((table.shape[0] - 3) ** 0.5) + 1) // 2
    hidden = out['layers.0.ffn.layers.0.0.weight'].shape[0]
    options = dict(
        embed_dims=patch.shape[0],
        num_layers=len(layers),
        num_heads=table.shape[1],
        patch_size=patch.shape[-1],
        img_size=window * patch.shape[-1],
        mlp_ratio=hidden // patch.shape[0],
        qv_bias=True,
        final_norm=final_norm,
    )
    return out, options


__all__ = ['beit_to_mmseg', 'expand_shared_rel_pos_bias', 'mmseg_beit_keys']
