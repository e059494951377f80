"""Building a model from a config, with its weights, for inference."""

from mmengine.config import Config
from mmengine.logging import print_log
from torch import nn


def _quiet_init_weights(model: nn.Module) -> None:
    """``model.init_weights()`` without its per-parameter INFO log."""
    import logging

    from mmengine.logging import MMLogger

    logger = MMLogger.get_current_instance()
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        model.init_weights()
    finally:
        logger.setLevel(level)


def init_model(
    config: str | Config,
    checkpoint: str | None = None,
    device: str = 'cpu',
    cfg_options: dict | None = None,
    trusted: bool | None = None,
) -> nn.Module:
    """Build ``cfg.model`` and load a checkpoint into it, in eval mode.

    Without a checkpoint the model keeps its random initialisation
    (``init_weights()`` is called), which the tests use.

    Args:
        config (str | Config): Config file or object.
        checkpoint (str, optional): A ``.pth`` file of the whole algorithm
            (keys ``backbone.*``, ``neck.*``, ...), loaded with
            :func:`mmssl.checkpoint.load_checkpoint`; wrappers and
            ``module.`` prefixes from DDP are removed.
        device (str): ``'cpu'`` or ``'cuda'``. Defaults to ``'cpu'``.
        cfg_options (dict, optional): Config overrides.
        trusted (bool, optional): Fully unpickle the checkpoint and any
            ``init_cfg`` file (trusted files only); None follows
            ``MMSSL_TRUST_CHECKPOINT`` (see
            :func:`mmssl.checkpoint.load_checkpoint`). Defaults to None.

    Returns:
        nn.Module: The model, on ``device``, in eval mode, with its config
        as ``model.cfg``.
    """
    from mmssl.checkpoint import (
        load_checkpoint,
        loading_policy,
        unwrap_state_dict,
    )
    from mmssl.config import load_config
    from mmssl.registry import MODELS
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    cfg = (
        config
        if isinstance(config, Config)
        else load_config(config, cfg_options)
    )
    model = MODELS.build(cfg.model)
    with loading_policy(trusted):  # init_cfg=dict(type='Pretrained', ...)
        _quiet_init_weights(model)
    if checkpoint:
        state = unwrap_state_dict(load_checkpoint(checkpoint, trusted=trusted))
        result = model.load_state_dict(state, strict=False)
        if result.missing_keys or result.unexpected_keys:
            print_log(
                f'Loaded {checkpoint} with {len(result.missing_keys)} '
                f'missing keys {result.missing_keys[:5]} and '
                f'{len(result.unexpected_keys)} unexpected keys '
                f'{result.unexpected_keys[:5]}.',
                logger='current',
                level=30,
            )
    model.cfg = cfg
    return model.to(device).eval()
