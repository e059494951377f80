"""RunSummaryHook: the closing lines name each metric's data."""

from types import SimpleNamespace

from mmengine.config import Config

from mmssl.engine.hooks import RunSummaryHook


def test_summary_names_work_dir_checkpoint_and_the_data_of_each_metric(
    tmp_path,
):
    (tmp_path / 'last_checkpoint').write_text(f'{tmp_path}/epoch_2.pth')
    cfg = Config(
        dict(
            train_dataloader=dict(dataset=dict(data_root='/data/mine')),
            val_dataloader=dict(
                dataset=dict(
                    bank=dict(data_root='data/demo', data_prefix='train'),
                    query=dict(data_root='data/demo', data_prefix='val'),
                )
            ),
        )
    )
    runner = SimpleNamespace(cfg=cfg, work_dir=str(tmp_path), iter=44)
    hook = RunSummaryHook()
    hook.after_val_epoch(runner, {'knn/top1': 61.5599, 'knn/top5': 94.429})
    assert hook.summary_lines(runner) == [
        f'run finished: 44 iterations; work dir {tmp_path}',
        'trained on /data/mine',
        f'last checkpoint: {tmp_path}/epoch_2.pth',
        'knn/top1 61.56, knn/top5 94.43 on bank data/demo/train, '
        'queries data/demo/val',
    ]
    (tmp_path / 'last_checkpoint').unlink()
    hook = RunSummaryHook()
    lines = hook.summary_lines(runner)
    assert lines[2:] == [
        'last checkpoint: none saved',
        'no validation metric (no validation ran)',
        'judge it: python tools/eval.py CONFIG --checkpoint CKPT --task '
        'rank (no labels needed: RankMe against the random init), or '
        '--task knn --data ROOT (labelled ROOT/train and ROOT/val folders)',
    ]


def test_summary_without_validation_gives_the_logged_rankme(tmp_path):
    from mmengine.logging import MessageHub

    cfg = Config(dict(train_dataloader=dict(dataset=dict(data_root='/d'))))
    hub = MessageHub.get_instance('test_summary_rankme')
    for value in (1.0, 6.9, 26.74):  # before training, epochs 1, 2
        hub.update_scalar('rank/rankme', value)
    runner = SimpleNamespace(
        cfg=cfg, work_dir=str(tmp_path), iter=3, message_hub=hub
    )
    lines = RunSummaryHook().summary_lines(runner)
    assert lines[3:5] == [
        'no validation metric (no validation ran)',
        'rank/rankme 26.74 (first logged 1.00, RankMeHook) on images of '
        'the training data',
    ]
    assert lines[5].startswith('judge it: python tools/eval.py CONFIG')


def test_judge_line_names_the_work_dir_copy_of_the_config(tmp_path):
    """The runner's dump of the config holds the run's --cfg-options (its
    data_root) and environment variables (image_folder.py's RECIPE); the
    config's own file is named only when there is no copy."""
    config = tmp_path / 'configs' / 'mine.py'
    config.parent.mkdir()
    config.write_text("train_dataloader = dict(dataset=dict(data_root='/d'))")
    cfg = Config.fromfile(str(config))
    work_dir = tmp_path / 'wd'
    work_dir.mkdir()
    runner = SimpleNamespace(cfg=cfg, work_dir=str(work_dir), iter=3)
    judge = RunSummaryHook().summary_lines(runner)[-1]
    assert judge.startswith(f'judge it: python tools/eval.py {config} ')
    (work_dir / 'mine.py').write_text('# the dumped copy')
    judge = RunSummaryHook().summary_lines(runner)[-1]
    assert judge.startswith(
        f'judge it: python tools/eval.py {work_dir}/mine.py --checkpoint CKPT'
    )
