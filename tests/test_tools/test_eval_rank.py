"""tools/eval.py --task rank: RankMe of a checkpoint and of its random
init on a folder of unlabelled images, JSON, picture, errors."""

import json
import os
import os.path as osp
import re

import cv2
import numpy as np
import pytest
import torch

from mmssl.config import load_config
from mmssl.engine.runner.feature_extraction import pool_features
from mmssl.evaluation.rank import evenly_spaced, rank_metrics
from mmssl.evaluation.records import read_metrics
from mmssl.registry import MODELS
from mmssl.setup_env import register_all_modules
from tests.support.tools import ROOT, load_tool

DEMO = osp.join(ROOT, 'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py')


def _eval(argv):
    return load_tool('eval.py').main(argv)


@pytest.fixture(scope='module')
def folder(tmp_path_factory):
    """12 unlabelled 37x37 images in nested folders: the eval pipeline of
    the 32 px demo (short side to round(32 / 0.875) = 37, centre crop 32)
    only crops them, rows and columns 2..33."""
    root = tmp_path_factory.mktemp('images')
    rng = np.random.default_rng(0)
    for i in range(12):
        sub = root / f'part{i % 3}'
        sub.mkdir(exist_ok=True)
        cv2.imwrite(str(sub / f'{i}.png'), rng.integers(0, 256, (37, 37, 3)))
    return str(root)


def _model(seed):
    register_all_modules()
    torch.manual_seed(seed)
    model = MODELS.build(load_config(DEMO).model)
    model.init_weights()
    return model.eval()


def _expected_feats(model, root):
    """The features of the images of ``root`` by hand: sorted paths, the
    centre 32x32, the model's own normalisation, pooled."""
    paths = sorted(
        osp.join(d, f) for d, _, files in os.walk(root) for f in files
    )
    imgs = [cv2.imread(p)[2:34, 2:34] for p in paths]
    inputs = [torch.from_numpy(im).permute(2, 0, 1) for im in imgs]
    batch = dict(inputs=torch.stack(inputs), data_samples=None)
    with torch.no_grad():
        data = model.data_preprocessor(batch, False)
        return pool_features(model(data['inputs'], mode='tensor')).float()


def test_rank_task_measures_checkpoint_and_random_init(
    folder, tmp_path, capsys
):
    trained = _model(1)
    state = {
        f'teacher.backbone.{k}': v
        for k, v in trained.backbone.state_dict().items()
    }
    ckpt = str(tmp_path / 'w.pth')
    torch.save(dict(state_dict=state, meta=dict(epoch=1)), ckpt)
    work = str(tmp_path / 'work')
    metrics = _eval(
        [DEMO, '--task', 'rank', '--data', folder, '--checkpoint', ckpt,
         '--work-dir', work]
    )  # fmt: skip
    out = capsys.readouterr().out
    want = rank_metrics(_expected_feats(trained, folder))
    want_random = rank_metrics(_expected_feats(_model(0), folder))
    assert metrics['rank/rankme'] == pytest.approx(want['rankme'], rel=1e-4)
    assert metrics['rank/spread'] == pytest.approx(want['spread'], rel=1e-4)
    assert metrics['rank/random_init_rankme'] == pytest.approx(
        want_random['rankme'], rel=1e-4
    )
    assert metrics['rank/random_init_rankme'] != pytest.approx(
        metrics['rank/rankme'], rel=1e-3
    )
    assert (metrics['rank/images'], metrics['rank/dim']) == (12, 64)
    assert '12 of the 12 image files' in out
    assert (
        out.strip()
        .splitlines()[-1]
        .startswith(f'rank/rankme: {metrics["rank/rankme"]:.2f}')
    )
    assert read_metrics(osp.join(work, 'eval_rank.json')) == pytest.approx(
        metrics
    )
    picture = cv2.imread(osp.join(work, 'eval_rank.png'))
    assert picture.shape == (400, 600, 3)
    assert picture.std() > 10  # not blank


def test_rank_task_random_init_from_the_training_folder(
    folder, tmp_path, capsys
):
    work = str(tmp_path / 'work')
    metrics = _eval(
        [DEMO, '--task', 'rank', '--max-images', '5', '--work-dir', work,
         '--cfg-options', f'train_dataloader.dataset.data_root={folder}']
    )  # fmt: skip
    assert 'rank/random_init_rankme' not in metrics
    assert metrics['rank/images'] == 5
    out = capsys.readouterr().out
    assert 'RANDOM INIT' in out
    assert f'5 of the 12 image files of {folder}' in out


def test_rank_cli_skips_bad_files_and_counts_only_images_used(
    folder, tmp_path, capsys
):
    """A truncated JPEG and a text file named .png are skipped as in
    training: the features, the printed count and the record's count are
    those of the 12 readable images; one line says 2 files were skipped
    (a .txt beside them is no image file at all)."""
    import shutil

    bad = tmp_path / 'messy'
    shutil.copytree(folder, bad)
    ok, jpeg = cv2.imencode('.jpg', np.full((37, 37, 3), 90, np.uint8))
    (bad / 'part0' / 'cut.jpg').write_bytes(jpeg.tobytes()[:200])
    (bad / 'part1' / 'notes.png').write_text('not an image')
    (bad / 'part2' / 'readme.txt').write_text('no image file')
    work = tmp_path / 'work'
    # in-process (no interpreter start-up): the same argv, output, files
    _eval([DEMO, '--task', 'rank', '--data', str(bad), '--work-dir',
           str(work)])  # fmt: skip
    out = capsys.readouterr().out
    assert f'14 of the 14 image files of {bad}' in out
    lines = [x for x in out.splitlines() if 'rank: skipped' in x]
    assert len(lines) == 1, out
    assert lines[0].startswith(f'rank: skipped 2 unreadable file(s) of {bad}')
    assert 'truncated JPEG' in lines[0]
    assert lines[0].endswith('RankMe on the other 12 images')
    result = json.load(open(work / 'eval_rank.json'))
    assert result['run']['counts'] == {'images': 12, 'skipped': 2}
    assert result['rank/images'] == 12
    want = rank_metrics(_expected_feats(_model(0), folder))
    assert result['rank/rankme'] == pytest.approx(want['rankme'], rel=1e-4)
    last = out.strip().splitlines()[-1]
    assert f'[data {bad} (12 images / 2 skipped); weights random init]' in (
        last
    )


def test_rank_of_a_folder_without_readable_images_is_one_line(
    tmp_path, capsys
):
    for i in range(3):
        (tmp_path / f'{i}.png').write_text('not an image')
    with pytest.raises(SystemExit) as exit_:
        _eval([DEMO, '--task', 'rank', '--data', str(tmp_path),
               '--work-dir', str(tmp_path / 'w')])  # fmt: skip
    assert exit_.value.code == 2
    errors = [
        x for x in capsys.readouterr().err.splitlines()
        if x.startswith('error:')
    ]  # fmt: skip
    assert len(errors) == 1
    assert errors[0].startswith(
        'error: none of the image files read is a readable image'
    )
    assert not (tmp_path / 'w').exists()


def test_rank_task_names_a_missing_folder(tmp_path, capsys):
    missing = str(tmp_path / 'nowhere')
    with pytest.raises(SystemExit) as exit_:
        _eval([DEMO, '--task', 'rank', '--data', missing])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert re.fullmatch(r'error: --task rank .*nowhere.*give --data.*', err)


def test_evenly_spaced_subset():
    assert evenly_spaced(10, 4) == [0, 3, 6, 9]
    assert evenly_spaced(5, None) == [0, 1, 2, 3, 4]
    assert evenly_spaced(3, 10) == [0, 1, 2]
    assert evenly_spaced(7, 2) == [0, 6]


def test_rank_task_reads_volumes_as_the_config_trains(
    volume_data_root, tmp_path, capsys
):
    config = osp.join(
        ROOT, 'configs/volumetric/simclr3d_vit-tiny-p8_1xb32-30e_demo.py'
    )
    folder = osp.join(volume_data_root, 'val')
    files = [f for _, _, fs in os.walk(folder) for f in fs]
    metrics = _eval(
        [config, '--task', 'rank', '--data', folder, '--work-dir',
         str(tmp_path)]
    )  # fmt: skip
    assert metrics['rank/images'] == len(files) > 2
    assert 1 <= metrics['rank/rankme'] <= min(len(files), metrics['rank/dim'])
    out = capsys.readouterr().out
    assert 'loaded as the config trains, centre 32^3' in out


def test_volume_dataset_is_the_training_one_with_a_centre_cube(tmp_path):
    """The volumes of any folder are loaded by the training dataset's
    preprocess (its disk cache shared), then cut to the centre cube at
    the backbone's size: the images RankMeHook measures in training."""
    from mmengine.config import Config

    from mmssl.evaluation.folders import volume_eval_pipeline
    from mmssl.evaluation.tasks.rank_eval import dataset_cfg

    cfg = Config.fromfile(
        osp.join(ROOT, 'configs/volumetric/dino3d_vit-tiny-p16_my-ct.py')
    )
    split = dataset_cfg(cfg, str(tmp_path), 96)
    train = cfg.train_dataloader.dataset
    assert split['type'] == train.type == 'VolumeFolderDataset'
    assert split['preprocess'] == train.preprocess
    assert split['pipeline'] == volume_eval_pipeline(96)
    assert split['data_root'] == str(tmp_path) and not split['with_label']
    assert 'ann_file' not in split  # every volume of the folder given
    assert (split['cache'], split['cache_dir']) == ('disk', train.cache_dir)
