"""Turning a training checkpoint into a small, safe file to share.

The published file holds CPU tensors and plain metadata only (strings and
numbers), so it loads with ``torch.load(weights_only=True)``; its name ends
with the first 8 hex digits of its SHA-256, as OpenMMLab model zoos do. The
source is read with :func:`mmssl.checkpoint.load_checkpoint`: an mmengine
training checkpoint loads as is, anything else needs ``trusted=True``.
"""

import datetime
import hashlib
import io
import os.path as osp

import torch

from mmssl.checkpoint import (
    STATE_KEYS,
    atomic_write_bytes,
    describe_network,
    find_backbone_prefix,
    load_checkpoint,
    strip_prefix,
    unwrap_state_dict,
)
from mmssl.checkpoint.state_dict import network_of

#: Top-level checkpoint entries that only matter to resume training.
TRAINING_ONLY_KEYS = (
    'optimizer',
    'param_schedulers',
    'message_hub',
    'scheduler',
    'lr_scheduler',
    'amp',
    'loss_scaler',
    'grad_scaler',
    'ema_state_dict',
    'rng_state',
)


def sha256_of(path: str, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file."""
    digest = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(chunk), b''):
            digest.update(block)
    return digest.hexdigest()


def _plain(value):
    """Keep JSON-like values only (safe to load with weights_only)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


def _config_info(cfg_text: str | None) -> dict:
    """Algorithm type and backbone architecture from a config text."""
    info: dict = {}
    if not cfg_text:
        return info
    try:
        from mmengine.config import Config

        cfg = Config.fromstring(cfg_text, '.py')
        model = cfg.get('model', {})
        info['algorithm'] = model.get('type')
        backbone = model.get('backbone') or {}
        arch = backbone.get('arch')
        info['architecture'] = dict(
            type=backbone.get('type'),
            arch=arch if isinstance(arch, (str, type(None))) else _plain(arch),
            patch_size=backbone.get('patch_size'),
        )
    except Exception as err:  # noqa: BLE001 - metadata is best effort
        info['config_parse_error'] = str(err).splitlines()[0][:200]
    return info


def publish_checkpoint(
    src: str,
    out: str,
    backbone_only: bool = False,
    prefix: str | None = None,
    trusted: bool | None = None,
    network: str | None = None,
) -> tuple[str, dict]:
    """Write a published copy of ``src``; return its path and a summary.

    Args:
        src (str): Training checkpoint (mmengine ``CheckpointHook`` file).
        out (str): Output path; ``.pth`` is stripped and
            ``-<sha256[:8]>.pth`` appended.
        backbone_only (bool): Keep only the backbone weights, prefix
            removed: the network its paper evaluates, the teacher of the
            DINO family, else the online network (BYOL, MoCo); see
            :func:`mmssl.checkpoint.find_backbone_prefix`.
        prefix (str, optional): Backbone key prefix to use instead of the
            automatic choice, e.g. ``'backbone.'``.
        trusted (bool, optional): Fully unpickle ``src`` (trusted files
            only); None follows ``MMSSL_TRUST_CHECKPOINT`` (see
            :func:`mmssl.checkpoint.load_checkpoint`).
        network (str, optional): With ``backbone_only``: ``'teacher'``,
            ``'online'`` or ``'momentum'`` instead of the default.

    Returns:
        tuple[str, dict]: The written path and ``dict(prefix, network,
        num_tensors, removed, sha256)``; ``network`` says in words which
        network was kept and how to get the others.

    Raises:
        UnsafeCheckpointError: ``src`` pickles a type outside the allowlist
            and is not trusted.
    """
    from mmssl import __version__

    ckpt = load_checkpoint(src, trusted=trusted)
    state = unwrap_state_dict(ckpt)
    used_prefix, network_words = '', 'the whole model'
    if backbone_only:
        if prefix is None:
            used_prefix = find_backbone_prefix(state.keys(), network=network)
        else:
            used_prefix = prefix if prefix.endswith('.') else prefix + '.'
        network_words = describe_network(used_prefix, state.keys())
        state = strip_prefix(state, used_prefix)
        if not state:
            raise ValueError(f'No key of {src} starts with "{used_prefix}".')
    state = {k: v.detach().cpu().clone() for k, v in state.items()}
    old_meta = ckpt.get('meta') or {}
    cfg_text = old_meta.get('cfg') if isinstance(old_meta, dict) else None
    if cfg_text is not None and not isinstance(cfg_text, str):
        cfg_text = getattr(cfg_text, 'pretty_text', str(cfg_text))
    meta = dict(
        mmssl_version=__version__,
        published=datetime.datetime.now().isoformat(timespec='seconds'),
        source=osp.basename(src),
        epoch=old_meta.get('epoch'),
        iter=old_meta.get('iter'),
        seed=old_meta.get('seed'),
        experiment_name=old_meta.get('experiment_name'),
        mmengine_version=old_meta.get('mmengine_version'),
        backbone_only=backbone_only,
        backbone_prefix=used_prefix or None,
        backbone_network=network_of(used_prefix) if backbone_only else None,
        config=cfg_text,
        **_config_info(cfg_text),
    )
    removed = sorted(
        k
        for k, v in ckpt.items()
        if k != 'meta' and k not in STATE_KEYS and not torch.is_tensor(v)
    )
    published = dict(meta=_plain(meta), state_dict=state)

    base = out[:-4] if out.endswith('.pth') else out
    buffer = io.BytesIO()
    torch.save(published, buffer)
    data = buffer.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    final = f'{base}-{digest[:8]}.pth'
    atomic_write_bytes(data, final)
    return final, dict(
        prefix=used_prefix,
        network=network_words,
        num_tensors=len(state),
        removed=removed,
        sha256=digest,
    )
