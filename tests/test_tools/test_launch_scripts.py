"""The shell launchers build the right commands (faked srun / python)."""

import os
import os.path as osp
import stat
import sys

import pytest

from tests.support.dist import reserved_port, run

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
SCRIPTS = ['dist_train.sh', 'dist_test.sh', 'slurm_train.sh', 'slurm_test.sh']


def _fake(bin_dir, name, body):
    path = bin_dir / name
    path.write_text('#!/usr/bin/env bash\n' + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def _run(script, args, tmp_path, **env_extra):
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / 'calls.txt'
    # python: answer the free-port query, record every other call
    _fake(
        bin_dir,
        'python',
        f"""
case "$*" in
  "-m mmssl.launch.ports") echo 45678 ;;
  *) printf '%s\\n' "$@" > {log} ;;
esac
""",
    )
    _fake(bin_dir, 'srun', f'printf \'%s\\n\' "$@" > {log}\n')
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            'PORT',
            'NNODES',
            'NODE_RANK',
            'MASTER_ADDR',
            'GPUS',
            'GPUS_PER_NODE',
        )
    }
    env['PATH'] = f'{bin_dir}:{env["PATH"]}'
    env.update(env_extra)
    proc = run(
        ['bash', osp.join(ROOT, 'tools', script), *args], env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return log.read_text().splitlines(), proc.stdout


@pytest.mark.parametrize('script', SCRIPTS)
def test_scripts_parse_and_show_usage(script, tmp_path):
    path = osp.join(ROOT, 'tools', script)
    assert run(['bash', '-n', path], timeout=30).returncode == 0
    proc = run(['bash', path], timeout=60)
    assert proc.returncode == 2 and 'usage' in proc.stderr


def test_dist_train_single_node_free_port(tmp_path):
    argv, out = _run(
        'dist_train.sh',
        ['cfg.py', '4', '--amp', '--cfg-options', 'a=1 2'],
        tmp_path,
    )
    assert argv[:2] == ['-m', 'mmssl.launch.torchrun']
    assert '--nproc_per_node=4' in argv and '--nnodes=1' in argv
    assert '--master_port=45678' in argv  # picked, not 29500
    assert '--master_addr=127.0.0.1' in argv
    i = argv.index(osp.join(ROOT, 'tools', 'train.py'))
    assert argv[i + 1 :] == [
        'cfg.py',
        '--launcher',
        'pytorch',
        '--amp',
        '--cfg-options',
        'a=1 2',
    ]
    assert 'master 127.0.0.1:45678' in out


def test_dist_train_multi_node_and_port(tmp_path):
    argv, _ = _run(
        'dist_train.sh',
        ['cfg.py', '8'],
        tmp_path,
        NNODES='2',
        NODE_RANK='1',
        MASTER_ADDR='10.0.0.1',
    )
    assert '--nnodes=2' in argv and '--node_rank=1' in argv
    assert '--master_addr=10.0.0.1' in argv
    assert '--master_port=29500' in argv  # all nodes must agree
    argv, _ = _run('dist_train.sh', ['cfg.py', '2'], tmp_path, PORT='29911')
    assert '--master_port=29911' in argv


def test_dist_test(tmp_path):
    argv, _ = _run(
        'dist_test.sh',
        ['cfg.py', 'ckpt.pth', '2', '--out', 'm.json'],
        tmp_path,
    )
    i = argv.index(osp.join(ROOT, 'tools', 'test.py'))
    assert argv[i + 1 :] == [
        'cfg.py',
        'ckpt.pth',
        '--launcher',
        'pytorch',
        '--out',
        'm.json',
    ]


def test_slurm_train(tmp_path):
    argv, _ = _run(
        'slurm_train.sh',
        ['gpu', 'job1', 'cfg.py', 'wd', '--resume'],
        tmp_path,
        GPUS='16',
        GPUS_PER_NODE='8',
        CPUS_PER_TASK='6',
        SRUN_ARGS='--time=1-0 --quotatype=auto',
    )
    for part in (
        '-p',
        'gpu',
        '--job-name=job1',
        '--gres=gpu:8',
        '--ntasks=16',
        '--ntasks-per-node=8',
        '--cpus-per-task=6',
        '--kill-on-bad-exit=1',
        '--time=1-0',
        '--quotatype=auto',
    ):
        assert part in argv
    i = argv.index(osp.join(ROOT, 'tools', 'train.py'))
    assert argv[i + 1 :] == [
        'cfg.py',
        '--work-dir=wd',
        '--launcher=slurm',
        '--resume',
    ]


SLURM = '--launcher=slurm'


@pytest.mark.parametrize(
    'extra, expected',
    [
        # MMSelfSup's habit: flags right after CONFIG, no WORK_DIR
        (
            ['--amp', '--cfg-options', 'a=1 b'],
            [SLURM, '--amp', '--cfg-options', 'a=1 b'],
        ),
        ([], [SLURM]),
        (['wd', '--amp'], ['--work-dir=wd', SLURM, '--amp']),
        (['--work-dir', 'my wd'], [SLURM, '--work-dir', 'my wd']),
    ],
)
def test_slurm_train_passes_flags_after_the_config(extra, expected, tmp_path):
    """A 4th argument starting with '-' is a flag, not the work dir (it
    once ran with --work-dir=--amp and without AMP); every argument
    reaches tools/train.py intact, spaces included."""
    argv, _ = _run('slurm_train.sh', ['gpu', 'j', 'cfg.py'] + extra, tmp_path)
    i = argv.index(osp.join(ROOT, 'tools', 'train.py'))
    assert argv[i + 1 :] == ['cfg.py'] + expected


def test_slurm_test(tmp_path):
    argv, _ = _run(
        'slurm_test.sh', ['gpu', 'job1', 'cfg.py', 'c.pth'], tmp_path
    )
    assert '--ntasks=8' in argv  # defaults: 8 GPUs, 8 per node
    i = argv.index(osp.join(ROOT, 'tools', 'test.py'))
    assert argv[i + 1 :] == ['cfg.py', 'c.pth', '--launcher=slurm']


def test_init_distributed_from_slurm_variables(tmp_path):
    """A real (1-process, gloo) process group from faked SLURM vars."""
    code = (
        'from mmssl.engine.runner import init_distributed;'
        'import os, torch.distributed as d;'
        "r = init_distributed('slurm', 'nccl');"
        "print(r, os.environ['MASTER_ADDR'], d.get_backend());"
        'd.destroy_process_group()'
    )
    env = dict(
        os.environ,
        CUDA_VISIBLE_DEVICES='-1',
        SLURM_PROCID='0',
        SLURM_NTASKS='1',
        SLURM_LOCALID='0',
        SLURM_NODELIST='localhost',
        PYTHONPATH=ROOT,
    )
    with reserved_port() as port:  # held until the child has listened
        env['MASTER_PORT'] = str(port)
        proc = run([sys.executable, '-c', code], env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "(0, 1, 0, 'gloo') localhost gloo" in proc.stdout
