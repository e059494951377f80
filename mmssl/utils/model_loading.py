"""Loading configs, models and checkpoints for the command-line tools."""

import os.path as osp

from mmengine.config import Config
from mmengine.logging import print_log
from torch import nn


def load_checkpoint_file(
    path: str, map_location='cpu', trusted: bool = False
) -> dict:
    """Read a checkpoint file into a dict.

    Goes through :func:`mmssl.checkpoint.load_checkpoint`: mmengine's and
    mmssl's own types load, any other pickled object is refused unless
    ``trusted`` (see docs/en/checkpoints.md).

    Args:
        path (str): The ``.pth`` file.
        map_location: Where to put tensors. Defaults to ``'cpu'``.
        trusted (bool): Allow unpickling arbitrary objects; only for files
            you trust. Defaults to False.

    Returns:
        dict: The checkpoint; a bare state dict is wrapped as
        ``{'state_dict': ...}``.
    """
    from mmssl.checkpoint import load_checkpoint

    if '://' not in path and not osp.isfile(path):
        raise FileNotFoundError(f'Checkpoint file not found: {path}')
    ckpt = load_checkpoint(
        path, map_location=map_location, trusted=trusted or None
    )
    if not isinstance(ckpt, dict):
        raise TypeError(
            f'{path} does not hold a dict but a {type(ckpt).__name__}.'
        )
    if 'state_dict' not in ckpt:
        ckpt = {'state_dict': ckpt}
    return ckpt


def strip_prefix(state_dict: dict, prefix: str) -> dict:
    """Keys starting with ``prefix``, with it removed."""
    return {
        k[len(prefix) :]: v
        for k, v in state_dict.items()
        if k.startswith(prefix)
    }


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


def load_config(config: str, cfg_options: dict | None = None) -> Config:
    """``Config.fromfile`` plus ``--cfg-options`` overrides."""
    if not osp.isfile(config):
        raise FileNotFoundError(f'Config file not found: {config}')
    cfg = Config.fromfile(config)
    if cfg_options:
        cfg.merge_from_dict(cfg_options)
    return cfg


def init_model(
    config: str | Config,
    checkpoint: str | None = None,
    device: str = 'cpu',
    cfg_options: dict | None = None,
    trusted: bool = False,
) -> nn.Module:
    """Build ``cfg.model`` and load a checkpoint into it, in eval mode.

    Without a checkpoint the model keeps its random initialisation
    (``init_weights()`` is called), which the tests use.

    Args:
        config (str | Config): Config file or object.
        checkpoint (str, optional): A ``.pth`` file of the whole algorithm
            (keys ``backbone.*``, ``neck.*``, ...). ``module.`` prefixes from
            DDP are removed.
        device (str): ``'cpu'`` or ``'cuda'``. Defaults to ``'cpu'``.
        cfg_options (dict, optional): Config overrides.
        trusted (bool): See :func:`load_checkpoint_file`.

    Returns:
        nn.Module: The model, on ``device``, in eval mode, with its config
        as ``model.cfg``.
    """
    from mmssl.registry import MODELS
    from mmssl.utils import register_all_modules

    register_all_modules()
    cfg = (
        config
        if isinstance(config, Config)
        else load_config(config, cfg_options)
    )
    model = MODELS.build(cfg.model)
    _quiet_init_weights(model)
    if checkpoint:
        state = load_checkpoint_file(checkpoint, trusted=trusted)
        state = state['state_dict']
        if state and all(k.startswith('module.') for k in state):
            state = strip_prefix(state, 'module.')
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
