"""Progress lines a pipe can read."""

import io

from mmssl.engine.runner.progress import LineProgress, progress


class _Clock:
    def __init__(self, step):
        self.now, self.step = 0.0, step

    def __call__(self):
        self.now += self.step
        return self.now


def test_line_progress_prints_lines_at_the_interval():
    stream = io.StringIO()
    # every call of the clock advances 10 s; a line at least every 30 s
    bar = LineProgress(
        range(10), 'probe', every=30.0, stream=stream, clock=_Clock(10.0)
    )
    seen = []
    for i in bar:
        bar.set_postfix(loss=f'{i:.1f}')
        seen.append(i)
    assert seen == list(range(10))
    lines = stream.getvalue().splitlines()
    assert lines[0] == 'probe: 0/10 (0%), 0 s'
    assert lines[-1].startswith('probe: 10/10 (100%), ')
    assert lines[-1].endswith('loss=9.0')
    assert '\r' not in stream.getvalue()
    # 10 s per item: a line after items 3, 6 and 9, the first, the last
    assert [x.split(',')[0] for x in lines[1:4]] == [
        'probe: 3/10 (30%)', 'probe: 6/10 (60%)', 'probe: 9/10 (90%)'
    ]  # fmt: skip
    assert len(lines) == 5


def test_progress_without_a_terminal_is_lines(capsys):
    assert list(progress(range(3), 'x')) == [0, 1, 2]
    err = capsys.readouterr().err
    assert err.splitlines()[0] == 'x: 0/3 (0%), 0 s'
    assert list(progress(range(3), 'x', disable=True)) == [0, 1, 2]
    assert capsys.readouterr().err == ''
