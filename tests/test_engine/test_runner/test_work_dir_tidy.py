"""WorkDirTidy: a run that never trained leaves nothing behind."""

from mmssl.engine.runner.lifecycle import WorkDirTidy


def _start_a_run(wd, stamp='20261127_092231'):
    (wd / stamp / 'vis_data').mkdir(parents=True)
    (wd / stamp / f'{stamp}.log').write_text('log')
    (wd / 'demo.py').write_text('config copy')


def test_new_work_dir_and_parents_go_away(tmp_path):
    wd = tmp_path / 'work_dirs' / 'demo'
    tidy = WorkDirTidy(str(wd))
    _start_a_run(wd)
    tidy.tidy()
    assert list(tmp_path.iterdir()) == []


def test_an_earlier_run_is_kept(tmp_path):
    wd = tmp_path / 'wd'
    _start_a_run(wd, '20261126_080000')
    (wd / 'epoch_1.pth').write_bytes(b'x')
    before = sorted(p.name for p in wd.iterdir())
    tidy = WorkDirTidy(str(wd))
    _start_a_run(wd, '20261127_092231_1')
    (wd / 'mmssl-run.lock').write_text('')
    tidy.tidy()
    assert sorted(p.name for p in wd.iterdir()) == before


def test_a_run_that_saved_a_checkpoint_is_left_alone(tmp_path):
    wd = tmp_path / 'wd'
    tidy = WorkDirTidy(str(wd))
    _start_a_run(wd)
    (wd / 'iter_10.pth').write_bytes(b'x')
    tidy.tidy()
    assert sorted(p.name for p in wd.iterdir()) == [
        '20261127_092231',
        'demo.py',
        'iter_10.pth',
    ]
