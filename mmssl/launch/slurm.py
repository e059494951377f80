"""Rank, world size and rendezvous address from SLURM (or MPI) variables.

Pure functions over an environment mapping, so they can be unit-tested
with faked environments and no SLURM installation.
"""

import itertools
import re
from typing import Dict, List, Mapping, Optional

# SLURM_NODELIST grammar: comma separated items, each a host name with
# zero or more bracket groups, e.g. ``gpu[01-03,07],cpu-[1-2]-x[a]``.
_BRACKET = re.compile(r'\[([^\]]*)\]')


def _split_top_level(text: str) -> List[str]:
    """Split ``text`` at commas that are not inside ``[...]``."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == '[':
            depth += 1
        elif ch == ']':
            depth -= 1
            if depth < 0:
                raise ValueError(f'Unbalanced "]" in node list {text!r}')
        elif ch == ',' and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise ValueError(f'Unbalanced "[" in node list {text!r}')
    items.append(text[start:])
    return [item.strip() for item in items if item.strip()]


def _expand_range_list(spec: str, nodelist: str) -> List[str]:
    """``'01-03,07'`` -> ``['01', '02', '03', '07']`` (padding kept)."""
    out = []
    for part in spec.split(','):
        part = part.strip()
        if not part:
            continue
        if '-' in part:
            lo, hi = part.split('-', 1)
            if not (lo.isdigit() and hi.isdigit()) or int(lo) > int(hi):
                raise ValueError(
                    f'Bad range {part!r} in node list {nodelist!r}'
                )
            width = len(lo)
            out.extend(
                str(n).zfill(width) for n in range(int(lo), int(hi) + 1)
            )
        else:
            out.append(part)
    return out


def parse_slurm_nodelist(nodelist: str) -> List[str]:
    """Expand a SLURM host list into host names, in order.

    Examples:
        >>> parse_slurm_nodelist('node[01-03,07]')
        ['node01', 'node02', 'node03', 'node07']
        >>> parse_slurm_nodelist('a1,b[2-3]')
        ['a1', 'b2', 'b3']
        >>> parse_slurm_nodelist('r[1-2]n[1-2]')
        ['r1n1', 'r1n2', 'r2n1', 'r2n2']

    Args:
        nodelist (str): Value of ``SLURM_NODELIST`` /
            ``SLURM_JOB_NODELIST`` / ``SLURM_STEP_NODELIST``.

    Returns:
        list[str]: Host names; the first one hosts rank 0.

    Raises:
        ValueError: On unbalanced brackets, bad ranges or an empty list.
    """
    hosts: List[str] = []
    for item in _split_top_level(nodelist):
        pieces = _BRACKET.split(item)
        # pieces alternates literal text and bracket contents
        choices = []
        for i, piece in enumerate(pieces):
            if i % 2 == 0:
                choices.append([piece])
            else:
                choices.append(_expand_range_list(piece, nodelist))
        hosts.extend(''.join(combo) for combo in itertools.product(*choices))
    if not hosts:
        raise ValueError(f'Empty SLURM node list {nodelist!r}')
    return hosts


def slurm_master_port(environ: Mapping[str, str], default: int = 29500) -> int:
    """The rendezvous port every rank of a SLURM job agrees on.

    Order: ``MASTER_PORT``, then ``PORT``, then a port derived from
    ``SLURM_JOB_ID`` (15000 + job id mod 20000, so two jobs sharing a node
    do not collide), then ``default``.

    Args:
        environ (Mapping[str, str]): The environment.
        default (int): Port when nothing else decides. Defaults to 29500.

    Returns:
        int: The port.
    """
    for key in ('MASTER_PORT', 'PORT'):
        if environ.get(key):
            return int(environ[key])
    job_id = environ.get('SLURM_JOB_ID') or environ.get('SLURM_JOBID')
    if job_id and job_id.isdigit():
        return 15000 + int(job_id) % 20000
    return default


def slurm_dist_env(environ: Mapping[str, str]) -> Dict[str, str]:
    """torch.distributed variables for a task started by ``srun``.

    Args:
        environ (Mapping[str, str]): The environment of one SLURM task.

    Returns:
        dict: ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``,
        ``MASTER_PORT`` as strings. ``MASTER_ADDR`` already in
        ``environ`` wins over the first host of the node list.

    Raises:
        RuntimeError: If a SLURM variable is missing (not run by srun).
    """
    missing = [k for k in ('SLURM_PROCID', 'SLURM_NTASKS') if k not in environ]
    nodelist = (
        environ.get('SLURM_STEP_NODELIST')
        or environ.get('SLURM_JOB_NODELIST')
        or environ.get('SLURM_NODELIST')
    )
    if not nodelist and not environ.get('MASTER_ADDR'):
        missing.append('SLURM_NODELIST')
    if missing:
        raise RuntimeError(
            f'--launcher slurm needs the SLURM variables {missing}; start '
            'the job with srun (tools/slurm_train.sh) or use --launcher '
            'pytorch with torchrun (tools/dist_train.sh).'
        )
    rank = int(environ['SLURM_PROCID'])
    world_size = int(environ['SLURM_NTASKS'])
    local_rank = int(environ.get('SLURM_LOCALID', 0))
    master = environ.get('MASTER_ADDR') or parse_slurm_nodelist(nodelist)[0]
    return dict(
        RANK=str(rank),
        WORLD_SIZE=str(world_size),
        LOCAL_RANK=str(local_rank),
        MASTER_ADDR=master,
        MASTER_PORT=str(slurm_master_port(environ)),
    )


def mpi_dist_env(environ: Mapping[str, str]) -> Dict[str, str]:
    """torch.distributed variables for a process started by ``mpirun``.

    Reads Open MPI (``OMPI_COMM_WORLD_*``) or MPICH/Intel MPI (``PMI_*``,
    ``MPI_LOCALRANKID``) variables. ``MASTER_ADDR`` defaults to
    ``127.0.0.1`` (set it for several nodes), ``MASTER_PORT`` to 29500.

    Args:
        environ (Mapping[str, str]): The environment.

    Returns:
        dict: ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``,
        ``MASTER_PORT`` as strings.

    Raises:
        RuntimeError: If no MPI rank variables are present.
    """

    def first(*keys: str) -> Optional[str]:
        for key in keys:
            if environ.get(key) is not None:
                return environ[key]
        return None

    rank = first('OMPI_COMM_WORLD_RANK', 'PMI_RANK')
    size = first('OMPI_COMM_WORLD_SIZE', 'PMI_SIZE')
    if rank is None or size is None:
        raise RuntimeError(
            '--launcher mpi needs OMPI_COMM_WORLD_RANK/SIZE (Open MPI) or '
            'PMI_RANK/SIZE (MPICH); start the job with mpirun.'
        )
    local = first('OMPI_COMM_WORLD_LOCAL_RANK', 'MPI_LOCALRANKID') or '0'
    return dict(
        RANK=rank,
        WORLD_SIZE=size,
        LOCAL_RANK=local,
        MASTER_ADDR=environ.get('MASTER_ADDR', '127.0.0.1'),
        MASTER_PORT=environ.get('MASTER_PORT')
        or environ.get('PORT')
        or '29500',
    )
