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
        ci = f.read()
    assert test_cmd in ci.splitlines()


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
