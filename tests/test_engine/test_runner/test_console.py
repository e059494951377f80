"""Long INFO dumps stay off the console; warnings only on rank 0."""

import io
import logging
import warnings

from mmssl.engine.runner.console import (
    MAX_CONSOLE_LINES,
    shorten_console,
    warnings_on_rank_zero_only,
)


def test_long_info_records_go_to_the_file_only(tmp_path):
    logger = logging.getLogger('mmssl-test-console')
    logger.propagate = False
    console, path = io.StringIO(), tmp_path / 'run.log'
    file_handler = logging.FileHandler(path)
    logger.handlers = [logging.StreamHandler(console), file_handler]
    logger.setLevel(logging.INFO)
    assert shorten_console(logger) is True
    assert shorten_console(logger) is False  # once per handler
    dump = 'Config:\n' + 'x = 1\n' * MAX_CONSOLE_LINES
    logger.info(dump)
    logger.info('short\nline')
    logger.warning('long warning\n' * MAX_CONSOLE_LINES)
    file_handler.close()
    shown = console.getvalue()
    assert 'Config:' not in shown
    assert 'short\nline' in shown and 'long warning' in shown
    assert 'Config:' in path.read_text()


def test_warnings_ignored_on_other_ranks_only():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter('always')
        warnings_on_rank_zero_only(0)
        warnings.warn('rank 0 sees this')
        warnings_on_rank_zero_only(1)
        warnings.warn('rank 1 does not')
    assert [str(w.message) for w in seen] == ['rank 0 sees this']


def test_dataloader_workers_other_than_zero_ignore_warnings():
    from mmssl.engine.runner import SSLRunner

    cfg = dict(
        dataset=list(range(4)),
        sampler=dict(type='DefaultSampler', shuffle=False),
        batch_size=2,
        num_workers=2,
    )
    loader = SSLRunner.build_dataloader(dict(cfg), seed=0)
    assert loader.worker_init_fn.keywords['disable_subprocess_warning']
    cfg['disable_subprocess_warning'] = False  # the config can opt out
    loader = SSLRunner.build_dataloader(dict(cfg), seed=0)
    assert not loader.worker_init_fn.keywords['disable_subprocess_warning']
