"""tools/analysis_tools/benchmark_packing.py: both sides timed in turns."""

import re

import pytest

from tests.support.tools import load_tool

bench = load_tool('analysis_tools/benchmark_packing.py')


@pytest.mark.parametrize('backbone', ['dinov2', 'dinov3'])
def test_times_both_paths_and_checks_equality(backbone, capsys):
    times = bench.main(
        ['--demo', '--backbone', backbone, '--batch', '1', '--repeats', '3',
         '--warmup', '0']
    )  # fmt: skip
    assert len(times[False]) == len(times[True]) == 3
    assert all(t > 0 for t in times[False] + times[True])
    out = capsys.readouterr().out
    assert 'batch 1: 2 x 32 px + 4 x 16 px crops' in out
    diff = float(re.search(r'per-size\| \(eval\): (\S+)', out).group(1))
    assert diff < 1e-5
    assert re.search(r'median of 3 interleaved rounds: \d+\.\d{3}', out)


def test_default_sizes_follow_the_backbone():
    v2 = bench.parse_args([])
    v3 = bench.parse_args(['--backbone', 'dinov3'])
    assert (v2.patch_size, v2.local_size, v2.batch) == (14, 98, 2)
    assert (v3.patch_size, v3.local_size) == (16, 96)
    demo = bench.parse_args(['--demo'])
    assert (demo.batch, demo.global_size, demo.num_local) == (64, 32, 4)
