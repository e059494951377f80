"""Finding the checkpoint ``--resume`` continues from."""

import glob
import os.path as osp
import re
from typing import Optional, Tuple

_CKPT_NUMBER = re.compile(r'(?:epoch|iter)_(\d+)\.pth$')


def find_newest_checkpoint(work_dir: str) -> Optional[str]:
    """The newest checkpoint of a work dir, or None.

    mmengine's CheckpointHook writes the path of the last checkpoint it
    saved into ``<work_dir>/last_checkpoint``; that file wins when the path
    it names exists (absolute, or relative to ``work_dir``). Otherwise the
    ``epoch_N.pth`` / ``iter_N.pth`` file with the latest modification time
    (then the largest N) is used, so a run killed between saving the
    checkpoint and updating ``last_checkpoint`` still resumes.

    Args:
        work_dir (str): The run's work directory.

    Returns:
        str | None: Path of the checkpoint, None when there is none.
    """
    marker = osp.join(work_dir, 'last_checkpoint')
    if osp.isfile(marker):
        with open(marker) as f:
            named = f.read().strip()
        for path in (named, osp.join(work_dir, osp.basename(named))):
            if named and osp.isfile(path):
                return path
    candidates = []
    for path in glob.glob(osp.join(work_dir, '*.pth')):
        match = _CKPT_NUMBER.search(osp.basename(path))
        if match:
            candidates.append((osp.getmtime(path), int(match.group(1)), path))
    if not candidates:
        return None
    return max(candidates)[2]


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
                f'--resume: no checkpoint found in {work_dir} (no '
                'last_checkpoint file and no epoch_*.pth/iter_*.pth); '
                'training starts from scratch.',
            )
        return True, ckpt, f'--resume: resuming from {ckpt}'
    if not osp.isfile(resume):
        raise FileNotFoundError(
            f'--resume {resume}: no such file. Pass an existing checkpoint '
            'or --resume without a value to take the newest one in the '
            'work dir.'
        )
    return True, resume, f'--resume: resuming from {resume}'
