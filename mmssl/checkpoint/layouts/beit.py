# Copyright (c) mmssl contributors. All rights reserved.
"""BEiT's shared relative-position bias -> one table per block.

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


__all__ = ['expand_shared_rel_pos_bias']
