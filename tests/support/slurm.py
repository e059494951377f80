"""A real one-node SLURM cluster on loopback, for the launcher tests.

Debian's ``slurm-wlm`` (slurmctld, slurmd) and ``munge`` are installed by
``.ci/run`` (``apt-get install slurm-wlm munge``). :func:`start_cluster`
writes a ``slurm.conf`` into a temporary folder, starts ``munged`` (as the
``munge`` user) if it is not running, then ``slurmctld -i`` and ``slurmd``
with ``SLURM_CONF`` pointing at that file, and waits until the node is idle.
Every SLURM command of the tests gets the same ``SLURM_CONF`` through the
environment returned in :class:`SlurmCluster`.

Known to work here: proctrack/linuxproc, task/none, no accounting,
select/cons_tres, no GPUs (so no gres), NodeAddr=127.0.0.1.
"""

import os
import os.path as osp
import re
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from mmssl.launch import find_free_port

BINARIES = ('slurmctld', 'slurmd', 'munged', 'sbatch', 'scontrol', 'squeue')
MUNGE_SOCKET = '/run/munge/munge.socket.2'


def missing_binaries() -> List[str]:
    """SLURM/munge programs that are not on PATH (or in /usr/sbin)."""
    path = os.environ.get('PATH', '') + ':/usr/sbin:/sbin'
    return [b for b in BINARIES if shutil.which(b, path=path) is None]


@dataclass
class SlurmCluster:
    """A running test cluster."""

    root: str
    env: Dict[str, str]
    partition: str = 'debug'
    pids: List[int] = field(default_factory=list)

    def run(self, *cmd: str, timeout: float = 30, check: bool = True):
        """Run a SLURM command against this cluster."""
        return subprocess.run(
            list(cmd),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=check,
        )

    def logs(self, lines: int = 20) -> str:
        """The last ``lines`` of the daemons' logs, for failure messages."""
        return _log_tails(self.root, lines)

    def node_state(self) -> str:
        """``sinfo`` state of the one node (``idle``, ``allocated``, ...)."""
        out = self.run('sinfo', '-h', '-o', '%T', check=False)
        return out.stdout.strip() if out.returncode == 0 else 'unknown'

    def steps_done(self, job_id: str) -> int:
        """How many steps of ``job_id`` slurmd has reported finished."""
        path = osp.join(self.root, 'slurmd.log')
        if not osp.isfile(path):
            return 0
        with open(path) as f:
            text = f.read()
        return len(re.findall(rf'\[{job_id}\.\w+\] done with job', text))

    def job_state(self, job_id: str) -> str:
        """``JobState`` of a job (``PENDING``, ``RUNNING``, ...)."""
        out = self.run('scontrol', 'show', 'job', job_id, check=False)
        for token in out.stdout.split():
            if token.startswith('JobState='):
                return token.split('=', 1)[1]
        return 'UNKNOWN'

    def wait_state(
        self, job_id: str, states: tuple, timeout: float = 120
    ) -> str:
        """Wait until the job reaches one of ``states``; return it."""
        deadline = time.monotonic() + timeout
        state = 'UNKNOWN'
        while time.monotonic() < deadline:
            state = self.job_state(job_id)
            if state in states:
                return state
            time.sleep(0.5)
        raise TimeoutError(
            f'job {job_id} still {state} after {timeout} s, '
            f'wanted one of {states}'
        )


def _conf(root: str, host: str, cpus: int, ports: tuple) -> str:
    return f"""ClusterName=mmssltest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ports[0]}
SlurmdPort={ports[1]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
ReturnToService=2
MpiDefault=none
KillWait=5
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def _start_munge() -> None:
    if osp.exists(MUNGE_SOCKET):
        probe = subprocess.run(
            'munge -n | unmunge', shell=True, capture_output=True, timeout=10
        )
        if probe.returncode == 0:
            return
    os.makedirs('/run/munge', exist_ok=True)
    shutil.chown('/run/munge', 'munge', 'munge')
    subprocess.run(
        ['su', '-s', '/bin/sh', 'munge', '-c', '/usr/sbin/munged --force'],
        check=True,
        timeout=30,
    )


def start_cluster(root: str, timeout: float = 60) -> SlurmCluster:
    """Start munge, slurmctld and slurmd; return once the node is idle.

    Args:
        root (str): An empty folder for the config, state and logs.
        timeout (float): Seconds to wait for the node. Defaults to 60.

    Raises:
        RuntimeError: If the node does not come up; the daemons' logs are
            quoted.
    """
    for sub in ('state', 'spool'):
        os.makedirs(osp.join(root, sub), exist_ok=True)
    host = socket.gethostname().split('.')[0]
    conf = osp.join(root, 'slurm.conf')
    with open(conf, 'w') as f:
        # free ports: two test sessions on one machine never share daemons
        ports = (find_free_port(), find_free_port())
        while ports[1] == ports[0]:
            ports = (ports[0], find_free_port())
        f.write(_conf(root, host, os.cpu_count() or 1, ports))
    env = dict(os.environ, SLURM_CONF=conf)
    for var in [
        k for k in env if k.startswith('SLURM_') and k != 'SLURM_CONF'
    ]:
        env.pop(var)
    _start_munge()
    sbin = '/usr/sbin'
    subprocess.run(
        [f'{sbin}/slurmctld', '-i'], env=env, check=True, timeout=30
    )
    subprocess.run([f'{sbin}/slurmd'], env=env, check=True, timeout=30)
    cluster = SlurmCluster(root=root, env=env)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = cluster.run('sinfo', '-h', '-o', '%T', check=False)
        if out.returncode == 0 and out.stdout.strip() == 'idle':
            return cluster
        time.sleep(0.5)
    logs = cluster.logs()
    stop_cluster(cluster)
    raise RuntimeError(f'the test SLURM node did not become idle:\n{logs}')


def _log_tails(root: str, lines: int) -> str:
    logs = ''
    for name in ('slurmctld.log', 'slurmd.log'):
        path = osp.join(root, name)
        if osp.isfile(path):
            with open(path) as f:
                logs += f'--- {name}\n' + ''.join(f.readlines()[-lines:])
    return logs


def _pid(path: str) -> Optional[int]:
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def stop_cluster(cluster: SlurmCluster) -> None:
    """Cancel every job, then stop slurmd and slurmctld (munged stays)."""
    try:
        cluster.run('scancel', '--user=root', check=False, timeout=15)
    except subprocess.TimeoutExpired:
        pass  # the controller is gone already; stop the daemons anyway
    for name in ('slurmd.pid', 'slurmctld.pid'):
        pid = _pid(osp.join(cluster.root, name))
        if pid is None:
            continue
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        for _ in range(50):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
