"""Every config parses with mmengine and its model builds.

Models are built on the ``meta`` device where they can be (no memory), so
most ImageNet-size ones are cheap; the rest are built on the CPU.
Pretrained target networks (CLIP, DALL-E, VQ-KD) would need their
checkpoint files, so they are left out of the build; their checks are
tested in test_target_generators.py.
"""

import glob
import os.path as osp
import re

import pytest
import torch

from mmssl.config.keys import check_top_level_keys
from mmssl.config.reading import load_config_file
from mmssl.registry import MODELS

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
#: Configs of the other toolboxes (``mmseg::`` / ``mmdet::`` bases): they
#: need those packages; test_export_configs.py checks them.
OTHER_TOOLBOXES = ('mmsegmentation', 'mmdetection')
CONFIGS = sorted(
    osp.relpath(p, ROOT)
    for p in glob.glob(osp.join(ROOT, 'configs', '**', '*.py'), recursive=True)
    if '_base_' not in p.split(osp.sep)
    # needs RECIPE: tests/test_configs/test_image_folder_config.py
    and not p.endswith(osp.join('configs', 'custom', 'image_folder.py'))
    and not any(t in p.split(osp.sep) for t in OTHER_TOOLBOXES)
)


@pytest.mark.parametrize('path', CONFIGS)
def test_config_parses_and_builds(path):
    cfg = load_config_file(osp.join(ROOT, path))
    assert cfg.default_scope == 'mmssl', 'configs must run in mmssl scope'
    # RUNNERS.build (mmengine-style tools) gives mmssl's runner too, so run
    # fractions, atomic saves and signals do not depend on tools/train.py
    assert cfg.get('runner_type') == 'SSLRunner', path
    assert 'model' in cfg
    # 'auto' sizes are filled by mmssl.config.resolve: mmengine's plain
    # Runner.from_cfg must stop at its first build, naming build_runner
    if "'auto'" in str(cfg.model):
        assert cfg.log_processor.type == 'UnresolvedLogProcessor', path
    # no top-level key that nothing reads (private ones start with _)
    check_top_level_keys(list(cfg.keys()), osp.join(ROOT, path))
    # kNN benchmarks only test a frozen backbone; everything else trains
    test_only = path.startswith(osp.join('configs', 'benchmarks', 'knn'))
    assert ('train_dataloader' in cfg) != test_only, path
    # an ImageNet recipe trains with the batch per GPU its name's NxbM
    # says (a second train_dataloader assignment once dropped two back to
    # their base's 512)
    per_gpu = re.search(r'_\d+xb(\d+)', osp.basename(path))
    if per_gpu and path.endswith('_in1k.py'):
        assert cfg.train_dataloader.batch_size == int(per_gpu[1]), path
    if path.endswith('_custom.py'):
        loader = cfg.test_dataloader if test_only else cfg.train_dataloader
        dataset = loader.dataset.bank if test_only else loader.dataset
        while 'data_root' not in dataset and 'dataset' in dataset:
            dataset = dataset.dataset  # wrappers: MixedResolutionDataset
        assert 'data_root' in dataset, 'custom configs read data_root'
        assert 'imagenet' not in dataset.data_root, 'not the in1k data'
        if dataset.type == 'CustomDataset':
            assert not dataset.with_label, 'pretraining data is unlabeled'
        return  # same model as the ImageNet config it inherits
    model_cfg = cfg.model.to_dict()
    target = model_cfg.get('target_generator') or {}
    if str(target.get('type', '')).startswith('Pretrained'):
        model_cfg.pop('target_generator')
    try:
        with torch.device('meta'):
            model = MODELS.build(model_cfg)
    except (RuntimeError, NotImplementedError) as err:
        if 'meta' not in str(err):
            raise
        model = MODELS.build(model_cfg)  # e.g. .item() on drop-path rates
    assert sum(p.numel() for p in model.parameters()) > 0
