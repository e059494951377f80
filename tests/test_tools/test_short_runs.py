"""tools/train.py on very short runs: the lr each iteration really used.

The DINOv2 demo (lr 1e-3, LinearLR warm-up from start_factor 1e-3 over
'10%', cosine to eta_min 1e-6 from '10%' to '100%') is trained for 1 to 3
iterations; ``base_lr`` of every iteration comes from the work dir's
``vis_data/scalars.json`` (logged before the schedulers step, so it is
the lr the iteration trained with).
"""

import glob
import json
import os.path as osp

import pytest

from tests.support.tools import load_tool

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
DINOV2 = osp.join(ROOT, 'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py')
train_tool = load_tool('train.py')

LR, START, ETA_MIN = 1e-3, 1e-3 * 1e-3, 1e-6
# cosine over 2 iterations, second one: eta_min + (lr - eta_min) / 2
HALF = ETA_MIN + (LR - ETA_MIN) * 0.5


def _lrs(data_root, work_dir, *length):
    train_tool.main(
        [
            DINOV2,
            '--work-dir',
            str(work_dir),
            *length,
            '--cfg-options',
            f'train_dataloader.dataset.data_root={data_root}/train',
            'train_dataloader.dataset.indices=8',
            'train_dataloader.batch_size=4',  # 2 iterations per epoch
            'train_dataloader.num_workers=0',
            'default_hooks.logger.interval=1',
            'val_cfg=None',
            'val_dataloader=None',
            'val_evaluator=None',
        ]
    )
    (path,) = glob.glob(str(work_dir / '*' / 'vis_data' / 'scalars.json'))
    with open(path) as f:
        rows = [json.loads(line) for line in f]
    return [row['base_lr'] for row in rows if 'base_lr' in row]


@pytest.mark.parametrize(
    'length, expected',
    [
        # one iteration: the warm-up (10% of it) is dropped, base lr
        (['--max-iters', '1'], [LR]),
        # the warm-up keeps its iteration and ends: start, base, cosine
        (['--max-iters', '3'], [START, LR, HALF]),
        # 1 epoch of 2 iterations: warm-up 0.2 iteration -> 1, then base
        (['--max-epochs', '1'], [START, LR]),
    ],
    ids=['1-iter', '3-iters', '1-epoch'],
)
def test_tiny_runs_train_at_the_scheduled_lr(
    length, expected, demo_data_root, tmp_path
):
    lrs = _lrs(demo_data_root, tmp_path / 'wd', *length)
    assert lrs == pytest.approx(expected, rel=1e-6)
