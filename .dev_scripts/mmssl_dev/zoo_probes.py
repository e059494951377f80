"""Which linear probe ``zoo_report.py`` gives a demo's row."""

import os.path as osp
from typing import List, Optional

#: The repository root (the demo and probe configs are read from it).
ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))

PROBES = {  # (backbone type, patch size or None) -> probe config per set
    ('ResNet_CIFAR', None): {
        'digits': 'linear_resnet18-w16_1xb64-5e_demo.py',
        'shapes': 'linear_resnet18-w16_1xb64-5e_shapes.py',
    },
    ('MAEViT', 4): {'digits': 'linear_vit-tiny-p4_1xb64-5e_demo.py'},
    ('MAEViT', 8): {'shapes': 'linear_vit-tiny-p8_1xb64-5e_shapes.py'},
}
FROZEN = 'tools/misc/knn_eval.py --linear'  # the probe without a config


def probe_config(cfg_file: str, dataset: str) -> Optional[str]:
    """The linear-probe config fitting this demo's backbone, if any."""
    from mmengine.config import Config

    backbone = Config.fromfile(osp.join(ROOT, cfg_file)).model.backbone
    patch = backbone.get('patch_size') if 'ViT' in backbone.type else None
    name = PROBES.get((backbone.type, patch), {}).get(dataset)
    return f'configs/benchmarks/linear_probe/{name}' if name else None


def has_batchnorm(cfg_file: str) -> bool:
    """Whether the demo's backbone has BatchNorm with running stats."""
    from mmengine.config import Config

    from mmssl.evaluation.bn_recalibration import batchnorm_layers
    from mmssl.registry import MODELS
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    backbone = Config.fromfile(osp.join(ROOT, cfg_file)).model.backbone
    return bool(batchnorm_layers(MODELS.build(backbone)))


def choose_probe(config: str, args, batchnorm: bool) -> Optional[str]:
    """The linear probe of a row: a probe config, :data:`FROZEN` or None.

    A backbone with BatchNorm always gets :data:`FROZEN`: its fair
    random-init baseline has the BatchNorm statistics re-estimated
    (``knn_eval.py --linear --bn-recalibrate``), which a probe config
    cannot do, and the trained figure must come from the same probe.
    """
    if not args.linear:
        return None
    if args.frozen_linear or batchnorm:
        return FROZEN
    return probe_config(config, args.dataset) or FROZEN


def memory_options(cfg_file: str, train_root: str) -> List[str]:
    """``model.num_samples=N`` for a demo whose memory bank or label
    buffer holds one entry per training image (NPID, ODC, DeepCluster),
    with N the number of images in ``train_root``; nothing for others.

    The demos size those buffers for the digits (1438 images), so the
    digits recipe run on another folder needs the new count.
    """
    from mmengine.config import Config

    from mmssl.registry import DATASETS
    from mmssl.setup_env import register_all_modules

    cfg = Config.fromfile(osp.join(ROOT, cfg_file))
    if 'num_samples' not in cfg.model:
        return []
    register_all_modules()
    dataset = cfg.train_dataloader.dataset
    dataset.update(data_root=osp.join(ROOT, train_root), pipeline=[])
    return [f'model.num_samples={len(DATASETS.build(dataset))}']
