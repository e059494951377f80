"""Fine-tuning benchmark configs: the demo really fine-tunes a loaded
backbone end to end, and the few-label configs select their subsets."""

import glob
import os.path as osp

import pytest
import torch
from mmengine.config import Config
from mmengine.hooks import Hook

from mmssl.engine.runner import build_runner
from mmssl.registry import MODELS
from mmssl.setup_env import register_all_modules

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
FINETUNE = osp.join(ROOT, 'configs', 'benchmarks', 'finetune')
DEMO = osp.join(FINETUNE, 'finetune_vit-tiny-p4_1xb64-10e_demo.py')


class _Record(Hook):
    """The weights when training starts, and every iteration's loss."""

    def __init__(self) -> None:
        self.losses = []

    def before_train(self, runner) -> None:
        self.start = {
            k: v.clone() for k, v in runner.model.state_dict().items()
        }

    def after_train_iter(
        self, runner, batch_idx, data_batch=None, outputs=None
    ):
        self.losses.append(float(outputs['loss']))


def _pretrained_backbone(path: str) -> dict:
    """An 'algorithm checkpoint': a ViT-tiny's weights behind backbone."""
    register_all_modules()
    cfg = Config.fromfile(DEMO)
    torch.manual_seed(1)
    backbone = MODELS.build(cfg.model.backbone)
    backbone.init_weights()  # pos_embed and cls_token drawn too
    state = {'backbone.' + k: v for k, v in backbone.state_dict().items()}
    state['neck.fc.weight'] = torch.zeros(2, 2)  # not the backbone's
    torch.save({'state_dict': state, 'meta': {}}, path)
    return state


def _runner(cfg, data_root, work_dir, max_iters):
    for loader in (cfg.train_dataloader, cfg.val_dataloader):
        loader.num_workers = 0
        loader.persistent_workers = False
    cfg.train_dataloader.dataset.dataset.data_root = data_root
    cfg.train_dataloader.batch_size = 32
    cfg.work_dir = work_dir
    cfg.train_cfg = dict(type='IterBasedTrainLoop', max_iters=max_iters)
    cfg.val_cfg = cfg.val_dataloader = cfg.val_evaluator = None
    cfg.test_cfg = cfg.test_dataloader = cfg.test_evaluator = None
    cfg.param_scheduler = []
    cfg.default_hooks.checkpoint = None
    return build_runner(cfg)


@pytest.mark.slow
def test_demo_finetunes_the_loaded_backbone(demo_data_root, tmp_path):
    ckpt = str(tmp_path / 'pre.pth')
    saved = _pretrained_backbone(ckpt)
    cfg = Config.fromfile(DEMO)
    cfg.model.init_cfg.checkpoint = ckpt
    runner = _runner(cfg, demo_data_root, str(tmp_path / 'run'), 60)
    record = _Record()
    runner.register_hook(record, priority='LOWEST')
    runner.train()
    # every backbone tensor came from the checkpoint ...
    for key, value in saved.items():
        if key.startswith('backbone.'):
            assert torch.equal(record.start[key], value), key
    log = open(glob.glob(str(tmp_path / 'run' / '*' / '*.log'))[0]).read()
    n = sum(k.startswith('backbone.') for k in saved)
    assert (
        f'into ImageClassifier: matched {n}, missing 2, unexpected 1'
    ) in log
    # ... and all of them learn (end to end, not a probe)
    after = runner.model.state_dict()
    frozen = [
        k
        for k in saved
        if k.startswith('backbone.')
        and 'num_batches' not in k
        and torch.equal(after[k], record.start[k])
    ]
    assert frozen == []
    first, last = record.losses[:10], record.losses[-10:]
    # chance is ln(10) = 2.30; a 10-batch mean varies by ~0.02
    assert sum(last) / 10 < sum(first) / 10 - 0.15, record.losses


def test_wrong_prefix_stops_the_finetune(tmp_path):
    ckpt = str(tmp_path / 'pre.pth')
    _pretrained_backbone(ckpt)
    cfg = Config.fromfile(DEMO)
    init = dict(cfg.model.init_cfg, checkpoint=ckpt, prefix='neck.')
    model = MODELS.build(dict(cfg.model, init_cfg=init))
    with pytest.raises(RuntimeError, match='min_match'):
        model.init_weights()


@pytest.mark.parametrize(
    'name,fraction',
    [
        ('finetune_vit-small-p16_8xb128-coslr-100e_in1k-1pct.py', 0.01),
        ('finetune_vit-small-p16_8xb128-coslr-100e_in1k-10pct.py', 0.1),
    ],
)
def test_few_label_configs_select_a_stratified_subset(name, fraction):
    cfg = Config.fromfile(osp.join(FINETUNE, name))
    dataset = cfg.train_dataloader.dataset
    assert dataset.type == 'LabelSubset'
    assert dataset.fraction == fraction and dataset.holdout == 0
    # the test split is the full one
    assert cfg.val_dataloader.dataset.type == 'CustomDataset'
