"""Long INFO dumps stay off the console; warnings only on rank 0."""

import io
import logging
import os
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


def test_known_noise_leaves_the_console_not_the_file(tmp_path):
    logger = logging.getLogger('mmssl-test-console-quiet')
    logger.propagate = False
    console, path = io.StringIO(), tmp_path / 'run.log'
    file_handler = logging.FileHandler(path)
    logger.handlers = [logging.StreamHandler(console), file_handler]
    logger.setLevel(logging.INFO)
    shorten_console(logger)
    logger.warning('"FileClient" will be deprecated in future. Please use')
    logger.warning('"HardDiskBackend" is the alias of "LocalBackend" and')
    logger.info('Exp name: simclr_20261127_092231')
    logger.info('Epoch(train) [1][4/4]  loss: 5.2  (Exp name: kept)')
    file_handler.close()
    shown = console.getvalue()
    assert shown.splitlines() == [
        'Epoch(train) [1][4/4]  loss: 5.2  (Exp name: kept)'
    ]
    assert 'FileClient' in path.read_text()
    assert 'Exp name: simclr' in path.read_text()


def test_quiet_known_warnings_hides_only_the_listed_messages(monkeypatch):
    from mmssl.engine.runner.console import quiet_known_warnings, rank_from_env

    monkeypatch.delenv('RANK', raising=False)
    monkeypatch.setenv('SLURM_PROCID', '3')
    assert rank_from_env() == 3
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter('always')
        quiet_known_warnings(0)
        warnings.warn(
            'Setting MKL_NUM_THREADS environment variable for each process '
            'to be 1 in default'
        )
        warnings.warn('`broadcast_buffers` is deprecated.', FutureWarning)
        warnings.warn('Setting MKL_NUM_THREADS yourself', FutureWarning)
        warnings.warn('something else')
    assert [str(w.message) for w in seen] == [
        'Setting MKL_NUM_THREADS yourself',
        'something else',
    ]


def test_workers_capped_at_the_cores_and_no_pinning_without_cuda():
    from mmssl.engine.runner.workers import (
        available_cpus,
        fit_dataloader_to_machine,
    )

    cfg = dict(batch_size=2, num_workers=8, pin_memory=True)
    fitted, note = fit_dataloader_to_machine(cfg, cpus=2, cuda=False)
    assert fitted['num_workers'] == 2 and fitted['pin_memory'] is False
    assert cfg['num_workers'] == 8  # the config itself is left alone
    assert (
        note == 'num_workers 8 -> 2 (2 CPU core(s) available to this process)'
    )
    fitted, note = fit_dataloader_to_machine(cfg, cpus=16, cuda=True)
    assert fitted is cfg and note is None
    fitted, note = fit_dataloader_to_machine(
        dict(num_workers=2, pin_memory=True), cpus=2, cuda=False
    )
    assert fitted['pin_memory'] is False and note is None
    assert 1 <= available_cpus() <= (os.cpu_count() or 1)
    # the runner applies it where every dataloader is built
    from mmssl.engine.runner import SSLRunner

    loader = SSLRunner.build_dataloader(
        dict(
            dataset=list(range(4)),
            sampler=dict(type='DefaultSampler', shuffle=False),
            batch_size=2,
            num_workers=available_cpus() + 5,
        )
    )
    assert loader.num_workers == available_cpus()


def test_warnings_shown_as_one_line_without_their_source(monkeypatch):
    """dist_train.sh echoed ``warnings.warn(`` under every warning."""
    from mmssl.engine.runner.console import quiet_known_warnings

    monkeypatch.setattr(warnings, 'formatwarning', warnings.formatwarning)
    monkeypatch.setattr(warnings, 'filters', list(warnings.filters))
    quiet_known_warnings(0)
    # Python's own format adds line 1 of this file (its docstring)
    text = warnings.formatwarning('take care', UserWarning, __file__, 1)
    assert text == f'{__file__}:1: UserWarning: take care\n'
