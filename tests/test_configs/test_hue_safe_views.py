"""The in1k contrastive configs take their pipeline from one _base_ file."""

import glob
import os.path as osp

import pytest

from mmssl.config.reading import load_config_file

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
USERS = sorted(
    f
    for f in glob.glob(osp.join(ROOT, 'configs', '*', '*_in1k*.py'))
    if '_hue_safe_pipelines' in open(f).read()
)


def _types(steps):
    for step in steps:
        if isinstance(step, list):
            yield from _types(step)
        elif isinstance(step, dict):
            yield step['type']
            yield from _types(step.get('transforms', []))


def test_all_nine_recipes_use_the_base_file():
    assert len(USERS) == 9


@pytest.mark.parametrize('path', USERS, ids=osp.basename)
def test_helper_key_is_popped_and_jitter_is_hue_safe(path):
    cfg = load_config_file(path)
    assert not [k for k in cfg if k.startswith('_hue_safe')]
    steps = cfg.train_dataloader.dataset.pipeline
    assert steps == cfg.train_pipeline
    kinds = list(_types(steps))
    assert 'ColorJitter' not in kinds
    assert kinds.count('HueSafeColorJitter') == len(steps[1].transforms)
