"""The README's Quick start commands must stay true."""

import os.path as osp
import re

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))


def _quick_start_commands() -> list[str]:
    with open(osp.join(ROOT, 'README.md')) as f:
        text = f.read()
    section = text.split('## Quick start', 1)[1].split('\n## ', 1)[0]
    return re.findall(r'```bash\n(.+?)\n```', section, flags=re.S)


def test_quick_start_has_exactly_two_commands():
    cmds = _quick_start_commands()
    assert len(cmds) == 2, cmds
    assert all('\n' not in c for c in cmds), 'each command is one line'


def test_quick_start_files_exist():
    train_cmd = _quick_start_commands()[0]
    for path in re.findall(r'(?:tools|configs)/\S+\.py', train_cmd):
        assert osp.isfile(osp.join(ROOT, path)), path


def test_ci_runs_the_readme_test_command():
    test_cmd = _quick_start_commands()[1]
    with open(osp.join(ROOT, '.ci', 'run')) as f:
        lines = [line.strip() for line in f]
    assert test_cmd in lines
    # ... in a virtual environment it makes afresh (what a new user gets),
    # the last command, so pytest's exit status is the script's
    assert lines.index(test_cmd) == len(lines) - 1
    steps = [
        'venv="${MMSSL_CI_VENV:-.ci/venv}"',
        'rm -rf "$venv"',
        '-m venv "$venv"',
        'source "$venv/bin/activate"',
    ]
    at = [
        next(i for i, line in enumerate(lines) if step in line)
        for step in steps
    ]
    assert at == sorted(at) and at[-1] < lines.index(test_cmd), at
    assert 'set -euo pipefail' in lines
    with open(osp.join(ROOT, '.gitignore')) as f:
        assert '/.ci/venv/' in f.read().split()  # never committed


def test_quick_start_shows_the_cpu_install_next_to_the_default():
    with open(osp.join(ROOT, 'README.md')) as f:
        text = f.read()
    section = text.split('## Quick start', 1)[1].split('\n## ', 1)[0]
    cpu = re.findall(r'```shell\n(.+?)\n```', section, flags=re.S)
    assert len(cpu) == 1 and '\n' not in cpu[0]
    default = _quick_start_commands()[0]
    # the same demo, after the CPU build of torch and torchvision
    prefix = (
        'pip install torch torchvision --index-url '
        'https://download.pytorch.org/whl/cpu && '
    )
    assert cpu[0] == prefix + default
