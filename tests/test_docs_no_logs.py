"""The user guides (README.md, docs/en/*.md) stay guides: no dates and no
commit ids in their text (the history of runs lives under docs/dev/), they
speak in the present tense (no "was", "former", "not run yet"), the README
carries no hand-refreshed test count, and model_zoo.md has no wall of
prose (no paragraph over about 8 lines)."""

import glob
import math
import os.path as osp
import re

import pytest

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
GUIDES = ['README.md'] + sorted(
    osp.relpath(p, ROOT) for p in glob.glob(osp.join(ROOT, 'docs/en/*.md'))
)
# Owned by another branch that removes its logs; drop once it has merged.
DATE = re.compile(r'\b20\d\d-\d\d-\d\d\b')
# 7-40 lowercase hex characters with at least one digit and one letter:
# an abbreviated or full git commit id (a 64-character sha256 is longer;
# an id of digits only is not told from a number, and passes)
COMMIT = re.compile(r'\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b')
# the hash suffix of a checkpoint's file name is not a commit
# (``dinov3_vits16_pretrain_lvd1689m-08c60483.pth``, publish_model.py)
FILE_HASH = re.compile(r'-[0-9a-f]{8}\.(pth|safetensors)\b')

# words of a log or a changelog; a guide says what is (quoted program
# output in code is exempt)
HISTORY = re.compile(
    r'\b(was|were|former|formerly|previously|no longer|not run yet'
    r'|has not run|have not run)\b',
    re.IGNORECASE,
)
# a count of tests that someone has to refresh by hand
TEST_COUNT = re.compile(r'\b\d+ (tests )?(passed|skipped)\b')

MAX_LINES = 8  # of at most 80 characters
WIDTH = 80


def log_marks(text: str) -> list:
    """The dates and commit ids in ``text``, as (line number, match)."""
    marks = []
    for number, line in enumerate(text.splitlines(), 1):
        marks += [(number, m) for m in DATE.findall(line)]
        marks += [(number, m) for m in COMMIT.findall(FILE_HASH.sub('', line))]
    return marks


def prose_lines(text: str):
    """(line number, line) outside code fences, inline code removed."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith('```'):
            fenced = not fenced
            continue
        if not fenced:
            yield number, re.sub(r'`[^`]*`', '', line)


def history_marks(text: str) -> list:
    """Past-tense and changelog words of the prose, as (line, word)."""
    return [
        (number, m.group(0))
        for number, line in prose_lines(text)
        for m in HISTORY.finditer(line)
    ]


def paragraphs(text: str) -> list:
    """Prose blocks of a markdown text: lines between blank lines, each
    list item its own block; code fences, tables, headings and HTML
    comments are not prose."""
    blocks, current, fenced = [], [], False

    def close():
        if current:
            blocks.append(list(current))
            current.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith('```'):
            fenced = not fenced
            close()
            continue
        if fenced or not stripped:
            close()
            continue
        if stripped.startswith(('|', '#', '<!--')):
            close()
            continue
        if re.match(r'([-*+]|\d+\.)\s', stripped):
            close()
        current.append(line)
    close()
    return blocks


def screen_lines(block: list) -> int:
    """Lines the block takes when wrapped at ``WIDTH`` characters."""
    return sum(max(1, math.ceil(len(line) / WIDTH)) for line in block)


def test_patterns_find_dates_and_commits_only():
    text = (
        'measured on 2026-11-26 at 3cd6244 and 6b2402b3c1d9\n'
        'lr 1e-3, 2 x 1024 tokens, ViT-B/16, deadbeef, 1234567, sha256 '
        + 'ab12'
        * 16
    )
    assert log_marks(text) == [
        (1, '2026-11-26'),
        (1, '3cd6244'),
        (1, '6b2402b3c1d9'),
    ]


def test_paragraphs_split_prose_and_skip_code_and_tables():
    text = (
        'one\ntwo\n\n- item a\n  more a\n- item b\n\n```bash\n'
        + 'code\n' * 20
        + '```\n| a | b |\n|---|---|\n# Head\n'
        + 'x' * 200
    )
    blocks = paragraphs(text)
    assert blocks == [
        ['one', 'two'],
        ['- item a', '  more a'],
        ['- item b'],
        ['x' * 200],
    ]
    assert screen_lines(blocks[-1]) == 3


@pytest.mark.parametrize('doc', GUIDES)
def test_guide_has_no_dates_or_commit_ids(doc):
    with open(osp.join(ROOT, doc), encoding='utf-8') as f:
        marks = log_marks(f.read())
    assert not marks, (
        f'{doc} reads like a log: {marks[:10]}; move the history to '
        'docs/dev/ and keep the current figure with its command'
    )


def test_history_words_are_found_outside_code_only():
    text = (
        'It was measured here; the former preset.\n'
        '`x was y` in code\n```\nan error: it was not allowed\n```\n'
        'It has not run yet. RankMe, no longer rising. Washington, wasp.\n'
    )
    assert history_marks(text) == [
        (1, 'was'),
        (1, 'former'),
        (6, 'has not run'),
        (6, 'no longer'),
    ]
    assert TEST_COUNT.search('2098 tests passed and 26 skipped')
    assert not TEST_COUNT.search('the counts of passed and skipped tests')


@pytest.mark.parametrize('doc', GUIDES)
def test_guide_speaks_in_the_present_tense(doc):
    with open(osp.join(ROOT, doc), encoding='utf-8') as f:
        marks = history_marks(f.read())
    assert not marks, (
        f'{doc} tells history: {marks[:10]}; say what is (the current '
        'figure and its command) and move the story to docs/dev/'
    )


def test_readme_says_how_to_measure_the_suite_not_its_count():
    with open(osp.join(ROOT, 'README.md'), encoding='utf-8') as f:
        text = f.read()
    assert not TEST_COUNT.findall(text), (
        'the README carries a test count to refresh by hand; say how to '
        'measure it (docs/dev/test_suite_timings.md keeps the figures)'
    )
    assert 'time' in text and '--durations' in text


def test_model_zoo_has_no_long_paragraph():
    with open(osp.join(ROOT, 'docs/en/model_zoo.md'), encoding='utf-8') as f:
        text = f.read()
    long = [
        (screen_lines(b), b[0][:60])
        for b in paragraphs(text)
        if screen_lines(b) > MAX_LINES
    ]
    assert not long, f'paragraphs over {MAX_LINES} lines: {long}'


def test_model_zoo_opens_with_one_row_per_algorithm():
    """The first table lists every algorithm folder's demo, once."""
    with open(osp.join(ROOT, 'docs/en/model_zoo.md'), encoding='utf-8') as f:
        text = f.read()
    rows = re.findall(r'^\|.*\|$', text.split('\n## ', 2)[1], flags=re.M)
    header, body = rows[0], rows[2:]
    assert 'status' in header and 'learns on' in header
    folders = [re.search(r'\(\.\./\.\./configs/(\w+)/', r) for r in body]
    assert all(folders), 'every row links its config'
    names = [m.group(1) for m in folders]
    assert len(names) == len(set(names))
    statuses = [r.rstrip('| ').rsplit('|', 1)[1] for r in body]
    assert all(
        re.fullmatch(r'\s*(learns|\[(level|not shown)\]\([^)]+\))\s*', s)
        for s in statuses
    ), statuses
    demos = {
        osp.basename(osp.dirname(p))
        for p in glob.glob(osp.join(ROOT, 'configs/*/*_demo.py'))
    } - {'multichannel', 'volumetric'}
    assert set(names) == demos
