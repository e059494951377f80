"""Checkpoints that run code when unpickled, and the schemes that load them.

Every refusal test loads a file whose unpickling would CREATE A FILE (the
marker) and asserts both the refusal and that the marker does not exist;
the trusted opt-in tests assert that the marker does exist, which shows the
payload is real.
"""

import os
import shlex
from collections import OrderedDict

import torch
from mmengine.runner.checkpoint import CheckpointLoader

TEST_SCHEME = 'mmssltest://'


class Payload:
    """Unpickles as ``os.system('touch MARKER')`` (``posix.system``)."""

    def __init__(self, marker) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return os.system, (f'touch {shlex.quote(self.marker)}',)


def save_payload_checkpoint(path, marker, base=None) -> str:
    """``base`` (a checkpoint dict, default: a tiny one) plus a payload."""
    ckpt = dict(base) if base is not None else _tiny()
    ckpt['evil'] = Payload(marker)
    torch.save(ckpt, str(path))
    return str(path)


def _tiny() -> dict:
    return {
        'meta': {'epoch': 1, 'iter': 2},
        'state_dict': OrderedDict(w=torch.arange(3.0)),
    }


def unsafe_loader(filename, map_location=None, *args, **kwargs):
    """A scheme loader that asks for full unpickling itself.

    Stands for any loader mmssl does not control (a plugin's scheme,
    ``torch.hub``); only the loading policy around it can stop a payload.
    Marked as already safe so that ``install_checkpoint_io`` does not wrap
    it: the tests see the policy of the entry point alone.
    """
    path = filename
    if path.startswith(TEST_SCHEME):
        path = path[len(TEST_SCHEME) :]
    unsafe_loader.calls.append(filename)
    return torch.load(path, map_location=map_location, weights_only=False)


unsafe_loader.calls = []
unsafe_loader._mmssl_safe = True


def register_unsafe_scheme(prefix: str = TEST_SCHEME):
    """Register :func:`unsafe_loader` for ``prefix``; return the old one."""
    old = CheckpointLoader._schemes.get(prefix)
    CheckpointLoader.register_scheme(prefix, unsafe_loader, force=True)
    return old


def restore_scheme(prefix: str, old) -> None:
    """Undo :func:`register_unsafe_scheme`."""
    if old is None:
        CheckpointLoader._schemes.pop(prefix, None)
    else:
        CheckpointLoader.register_scheme(prefix, old, force=True)
