"""benchmark_pipeline.py: warm-up, interleaved repeats, medians."""

import time

from tests.support.tools import load_tool

bench = load_tool('analysis_tools/benchmark_pipeline.py')


class Slow:
    """A dataset whose samples take ``delay`` s; it logs what it served."""

    def __init__(self, name, delay, log):
        self.name, self.delay, self.log = name, delay, log

    def __len__(self):
        return 100

    def __getitem__(self, i):
        self.log.append((self.name, i))
        time.sleep(self.delay)
        return i


def test_interleaved_warm_repeats():
    log = []
    sides = dict(
        mmssl=Slow('mmssl', 0.002, log),
        torchvision=Slow('torchvision', 0.008, log),
    )
    rates = bench.compare(sides, [5, 6, 7], warm=2, workers=0, repeats=3)
    # each pass: 2 warm-up samples then the 3 timed ones; order flips
    per_pass = [log[i : i + 5] for i in range(0, len(log), 5)]
    assert [p[0][0] for p in per_pass] == [
        'mmssl', 'torchvision', 'torchvision', 'mmssl', 'mmssl', 'torchvision'
    ]  # fmt: skip
    assert all([i for _, i in p] == [5, 6, 5, 6, 7] for p in per_pass)
    assert all(len(v) == 3 for v in rates.values())
    # 3 images at ~2 ms vs ~8 ms each: at most 500 and 125 images/s
    assert all(r < 500 for r in rates['mmssl'])
    assert all(r < 125 for r in rates['torchvision'])
    row = bench.report_row(1, rates).split()
    assert row[0] == '1'
    assert float(row[3].rstrip('x')) > 1.5  # median speed-up
