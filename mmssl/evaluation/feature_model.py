# Copyright (c) mmssl contributors. All rights reserved.
"""The model an evaluation builds from a pretraining config.

Feature evaluations (kNN, the linear probe on kNN features, RankMe) run the
backbone only. Masked-image-modelling configs also name a target network
(``model.target_generator``: the DALL-E tokenizer of BEiT and CAE, CLIP of
EVA, MILAN and iTPN, VQ-KD of BEiT v2) that only makes training targets;
building it downloads its weights. It is left out.
"""

import copy
from typing import Any, Tuple


def feature_model_cfg(model_cfg: Any) -> Tuple[Any, str]:
    """``(model config without its target network, note for the log)``.

    Args:
        model_cfg (dict | ConfigDict): The config's ``model``; not changed.

    Returns:
        tuple: The config to build (``model_cfg`` itself when it has no
        target network) and a note, ``''`` when nothing was left out.
    """
    target = model_cfg.get('target_generator')
    if not target:
        return model_cfg, ''
    out = copy.deepcopy(model_cfg)
    out.pop('target_generator')
    kind = target.get('type') if isinstance(target, dict) else target
    return out, (
        f'target network {kind} not built (training targets only; '
        'features come from the backbone)'
    )


__all__ = ['feature_model_cfg']
