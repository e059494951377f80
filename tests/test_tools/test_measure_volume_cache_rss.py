"""The RSS tool: 2 gloo ranks; the sharded memory cache holds one copy of
the data across ranks, the unsharded one a copy per rank."""

import pytest

from tests.support.tools import load_tool


@pytest.mark.slow
def test_sharded_cache_holds_one_copy(tmp_path, capsys):
    tool = load_tool('analysis_tools/measure_volume_cache_rss.py')
    report = tool.main(
        [
            '--num-volumes',
            '6',
            '--side',
            '16',
            '--epochs',
            '6',
            '--modes',
            'memory,memory-unsharded,none',
            '--work-dir',
            str(tmp_path),
            '--timeout',
            '240',
        ]
    )
    total = report['total_bytes']
    assert total == 6 * 16**3 * 4
    sharded = [r['cached_bytes'] for r in report['modes']['memory']]
    full = [r['cached_bytes'] for r in report['modes']['memory-unsharded']]
    # rank r keeps only indices i % 2 == r (at most 3 volumes each): one
    # copy at most across ranks; unsharded, each rank keeps all it reads
    assert all(0 < b <= total // 2 for b in sharded)
    assert sum(sharded) <= total < sum(full)
    assert max(full) == total
    assert [r['cached_bytes'] for r in report['modes']['none']] == [0, 0]
    for res in report['modes'].values():
        assert all(r['peak_kb'] >= r['before_kb'] > 0 for r in res)
    out = capsys.readouterr().out
    assert '| memory | 1 |' in out and 'peak RSS (MiB)' in out
