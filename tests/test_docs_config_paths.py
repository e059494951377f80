"""Every config path the READMEs and docs name exists."""

import glob
import os.path as osp
import re

import pytest

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
DOCS = sorted(
    osp.relpath(p, ROOT)
    for pattern in ('README.md', 'docs/en/*.md', 'configs/**/README.md')
    for p in glob.glob(osp.join(ROOT, pattern), recursive=True)
)
# a path starting at the repository root; placeholders are in capitals
PATH = re.compile(r'(?<![\w./-])(configs/[\w./-]+?\.py)\b')


def _paths(doc: str) -> list:
    text = open(osp.join(ROOT, doc), encoding='utf-8').read()
    return sorted(
        {p for p in PATH.findall(text) if not re.search(r'/[A-Z_]+\.py$', p)}
    )


def test_pattern_finds_paths_and_skips_placeholders():
    assert PATH.findall('run `configs/a/b_c-1.py` and tests/configs/x.py')
    assert PATH.findall('tests/data/configs/x.py') == []
    assert not re.search(r'/[A-Z_]+\.py$', 'configs/a/b.py')


@pytest.mark.parametrize('doc', DOCS)
def test_config_paths_exist(doc):
    missing = [p for p in _paths(doc) if not osp.isfile(osp.join(ROOT, p))]
    assert not missing, f'{doc} names missing configs: {missing}'
