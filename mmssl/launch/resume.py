"""Finding the checkpoint ``--resume`` continues from.

Only complete checkpoints are chosen: every candidate is checked as a
zip archive in torch's format (end-of-archive directory present, a
``data.pkl`` record, every record's CRC-32 right), newest first, and a
torn or partial file is named in a warning and passed over. A sharded
(DCP) checkpoint is a folder with the same name (``iter_N.pth/``): it is
complete when it has DCP's ``.metadata`` and a complete
:data:`SHARDED_RUNNER_STATE` file (both are written before the folder
gets its final name, see :mod:`mmssl.checkpoint.sharded`). Standard
library only (``zipfile``): this runs before torch is imported.
"""

import glob
import os
import os.path as osp
import re
import warnings
import zipfile
from typing import Dict, List, Optional, Tuple

_CKPT_NUMBER = re.compile(r'(?:epoch|iter)_(\d+)\.pth$')
#: The file of a sharded checkpoint folder that holds everything but the
#: model and optimizer shards (meta, message hub, schedulers, loop state).
SHARDED_RUNNER_STATE = 'runner_state.pth'


class IncompleteCheckpointWarning(UserWarning):
    """A checkpoint file was passed over because it is torn or partial."""


def checkpoint_problem(path: str, check_crc: bool = True) -> Optional[str]:
    """Why ``path`` is not a complete torch checkpoint, or None if it is.

    ``torch.save`` writes a zip archive whose central directory comes
    last, so a file cut short by a kill, a full disk or a lost write has
    none and fails to open; a file with zeroed or garbled blocks (power
    loss before fsync) fails the CRC-32 of its records.

    Args:
        path (str): The file.
        check_crc (bool): Read every record and compare its CRC-32 (reads
            the whole file, about a second per GB). Defaults to True.

    Returns:
        str | None: A short reason, or None when the file is complete.
    """
    if osp.isdir(path):
        return _sharded_problem(path, check_crc)
    try:
        size = os.path.getsize(path)
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            if not any(
                i.filename.rsplit('/', 1)[-1] == 'data.pkl' for i in infos
            ):
                return 'a zip archive without data.pkl, not a torch file'
            for info in infos:
                if info.header_offset + info.compress_size > size:
                    return f'record {info.filename} runs past the end'
            if not check_crc:
                return None
            for info in infos:
                # torch may be told not to compute CRCs (then all are 0)
                if info.CRC == 0 and info.file_size:
                    continue
                with archive.open(info) as f:
                    while f.read(1 << 22):
                        pass
    except zipfile.BadZipFile as exc:
        return f'not a complete zip archive ({exc}): torn or partial write'
    except (OSError, EOFError, ValueError) as exc:
        return f'unreadable ({type(exc).__name__}: {exc})'
    return None


def _sharded_problem(path: str, check_crc: bool) -> Optional[str]:
    if path.rstrip('/').endswith('.tmp'):
        return 'an unfinished sharded save (.tmp folder)'
    if not osp.isfile(osp.join(path, '.metadata')):
        return 'a folder without DCP .metadata, not a sharded checkpoint'
    state = osp.join(path, SHARDED_RUNNER_STATE)
    if not osp.isfile(state):
        return f'a sharded checkpoint without {SHARDED_RUNNER_STATE}'
    problem = checkpoint_problem(state, check_crc)
    return None if problem is None else f'{SHARDED_RUNNER_STATE}: {problem}'


def _is_checkpoint_path(path: str) -> bool:
    """A file, or a folder (sharded checkpoint)."""
    return osp.isfile(path) or osp.isdir(path)


def _pointer_target(work_dir: str) -> Optional[str]:
    """The existing file or folder ``<work_dir>/last_checkpoint`` names."""
    marker = osp.join(work_dir, 'last_checkpoint')
    if not osp.isfile(marker):
        return None
    with open(marker) as f:
        named = f.read().strip()
    if not named:
        return None
    # absolute, relative to the work dir, or the same name after a move
    for path in (
        named,
        osp.join(work_dir, named),
        osp.join(work_dir, osp.basename(named)),
    ):
        if _is_checkpoint_path(path):
            return osp.abspath(path)
    return None


def checkpoint_candidates(work_dir: str) -> List[str]:
    """Checkpoints of a work dir, newest first (not yet validated).

    ``epoch_N.pth`` / ``iter_N.pth`` files (or sharded folders) of the
    work dir, and the one ``last_checkpoint`` names with the ones beside
    it (mmengine's CheckpointHook may save to another ``out_dir``),
    ordered by modification time, then the one ``last_checkpoint`` names,
    then N.

    Args:
        work_dir (str): The run's work directory.

    Returns:
        list[str]: Paths, newest first.
    """
    pointed = _pointer_target(work_dir)
    folders = {osp.abspath(work_dir)}
    if pointed is not None:
        folders.add(osp.dirname(pointed))
    keys: Dict[str, Tuple] = {}
    for folder in sorted(folders):
        for path in glob.glob(osp.join(folder, '*.pth')):
            match = _CKPT_NUMBER.search(osp.basename(path))
            if match and _is_checkpoint_path(path):
                path = osp.abspath(path)
                keys[path] = (
                    osp.getmtime(path),
                    path == pointed,
                    int(match.group(1)),
                )
    if pointed is not None and pointed not in keys:
        keys[pointed] = (osp.getmtime(pointed), True, -1)
    return sorted(keys, key=keys.__getitem__, reverse=True)


def find_newest_checkpoint(
    work_dir: str, check_crc: bool = True
) -> Optional[str]:
    """The newest complete checkpoint of a work dir, or None.

    Candidates come from :func:`checkpoint_candidates`; the first one
    :func:`checkpoint_problem` accepts wins. Each one passed over is named,
    with the reason, in an :class:`IncompleteCheckpointWarning`.

    Args:
        work_dir (str): The run's work directory.
        check_crc (bool): See :func:`checkpoint_problem`. Defaults to True.

    Returns:
        str | None: Path of the checkpoint, None when there is none.
    """
    for path in checkpoint_candidates(work_dir):
        problem = checkpoint_problem(path, check_crc)
        if problem is None:
            return path
        warnings.warn(
            f'--resume: skipping {path}: {problem}; trying an older '
            'checkpoint.',
            IncompleteCheckpointWarning,
            stacklevel=2,
        )
    return None


def resolve_resume(
    resume: Optional[str], work_dir: str
) -> Tuple[bool, Optional[str], str]:
    """Turn the ``--resume`` argument into Runner settings.

    Args:
        resume (str, optional): None (no ``--resume``), ``'auto'``
            (``--resume`` without a value) or a checkpoint path.
        work_dir (str): The run's work directory.

    Returns:
        tuple: ``(resume, checkpoint, message)``. With ``'auto'`` and no
        checkpoint in ``work_dir``, ``resume`` is False and training starts
        from scratch, so the same command serves the first start and every
        restart (e.g. after a SLURM requeue).

    Raises:
        FileNotFoundError: when an explicit checkpoint does not exist.
    """
    if resume is None:
        return False, None, ''
    if resume == 'auto':
        ckpt = find_newest_checkpoint(work_dir)
        if ckpt is None:
            return (
                False,
                None,
                f'--resume: no complete checkpoint found in {work_dir} '
                '(no last_checkpoint file and no complete epoch_*.pth/'
                'iter_*.pth); training starts from scratch.',
            )
        return True, ckpt, f'--resume: resuming from {ckpt}'
    if not _is_checkpoint_path(resume):
        raise FileNotFoundError(
            f'--resume {resume}: no such file or sharded checkpoint folder. '
            'Pass an existing checkpoint or --resume without a value to '
            'take the newest one in the work dir.'
        )
    if osp.isdir(resume):
        problem = _sharded_problem(resume, check_crc=False)
        if problem is not None:
            raise FileNotFoundError(f'--resume {resume}: {problem}.')
    return True, resume, f'--resume: resuming from {resume}'
