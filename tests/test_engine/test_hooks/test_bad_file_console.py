"""A run over a folder with bad files warns about each file once, not
once per epoch and worker, and its summary gives the count."""

import glob
import os.path as osp
import shutil

from mmssl.engine.runner import build_runner
from tests.support.resume import tiny_cfg

SIMCLR = 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py'


def test_bad_files_warned_once_per_run_then_counted(
    demo_data_root, tmp_path, capfd
):
    folder = tmp_path / 'imgs'
    folder.mkdir()
    good = sorted(glob.glob(osp.join(demo_data_root, 'train', '*', '*.png')))
    for i, path in enumerate(good[:6]):
        shutil.copy(path, folder / f'{i}.png')
    (folder / 'empty.png').write_bytes(b'')
    (folder / 'text.jpg').write_text('not an image')
    cfg = tiny_cfg(
        SIMCLR,
        demo_data_root,
        str(tmp_path / 'work'),
        num_images=8,
        batch_size=4,
        train_cfg=dict(type='EpochBasedTrainLoop', max_epochs=3),
    )
    cfg.train_dataloader.dataset.update(
        data_root=str(folder), max_bad_ratio=0.5
    )
    cfg.train_dataloader.update(num_workers=1, persistent_workers=False)
    cfg.custom_hooks = [dict(type='BadFileSummaryHook', interval=1)]
    runner = build_runner(cfg)
    capfd.readouterr()
    runner.train()
    out, err = capfd.readouterr()
    console = (out + err).splitlines()
    for name in ('empty.png', 'text.jpg'):
        named = [x for x in console if name in x]
        assert len(named) == 1, console  # 3 epochs x a new worker each
        assert 'Bad image file skipped' in named[0]
    totals = [x for x in console if 'skipped so far' in x]
    assert len(totals) <= 2  # when a new file is found, not every epoch
    summary = [x for x in console if 'bad image file(s) skipped over' in x]
    assert len(summary) == 1 and '2 bad image file(s)' in summary[0]
