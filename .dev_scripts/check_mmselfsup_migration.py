"""Migrate MMSelfSup 1.x's pretraining configs and train each one iteration.

    python .dev_scripts/check_mmselfsup_migration.py \
        MMSELFSUP/configs/selfsup \
        --work-dir /tmp/mss_check [--only PATTERN] [--timeout 400]

Get the configs from MMSelfSup's v1.0.0 tag (``git archive v1.0.0
configs``). Every config outside ``_base_`` and ``classification/`` is
migrated (tools/misc/migrate_mmselfsup.py) and trained for one iteration
with tools/train.py on a fake ImageNet of 8 small images (batch 2, no
workers). What the fake set needs and nothing else is overridden: random
tokenizer files instead of the DALL-E/VQ-KD/CLIP downloads, and for the
memory-bank and clustering algorithms the set's size and 2 clusters.
Prints one line per config (status, seconds, name) and the count; the
logs are in WORK_DIR/logs.
"""

import argparse
import glob
import os
import os.path as osp
import subprocess
import sys
import time

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
NUM_IMAGES = 8


def fake_imagenet(root: str) -> None:
    """ImageNet's layout: train/<class>/*.JPEG and meta/train.txt."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    os.makedirs(osp.join(root, 'meta'), exist_ok=True)
    lines = []
    for i in range(NUM_IMAGES):
        name = f'n{i % 2:08d}/{i}.JPEG'
        os.makedirs(osp.dirname(osp.join(root, 'train', name)), exist_ok=True)
        size = (40, 48) if i % 2 else (48, 40)
        pixels = rng.integers(0, 255, size + (3,), dtype=np.uint8)
        Image.fromarray(pixels).save(osp.join(root, 'train', name))
        lines.append(f'{name} {i % 2}')
    with open(osp.join(root, 'meta', 'train.txt'), 'w') as f:
        f.write('\n'.join(lines) + '\n')


def random_tokenizers(folder: str) -> None:
    """Random-weight DALL-E, VQ-KD and CLIP files in the official layouts
    (the check runs offline; the targets carry no meaning)."""
    import torch
    from mmpretrain.models.selfsup.beit import VQKD
    from mmpretrain.models.selfsup.cae import DALLEEncoder
    from mmpretrain.models.utils.clip_generator_helper import CLIP

    os.makedirs(folder, exist_ok=True)
    enc = dict(arch='base', img_size=224, patch_size=16, out_type='featmap',
               with_cls_token=True, final_norm=True, layer_scale_init_value=0.,
               norm_cfg=dict(type='LN', eps=1e-6))  # fmt: skip
    files = {
        'dalle.pth': lambda: DALLEEncoder(),
        'vqkd.pth': lambda: VQKD(encoder_config=enc),
        # ViT-B/16 image tower; a one-layer text tower (unused)
        'clip.pth': lambda: CLIP(512, 224, 12, 768, 16, 77, 100, 64, 1, 1),
    }
    for name, build in files.items():
        if not osp.isfile(osp.join(folder, name)):
            torch.save(build().state_dict(), osp.join(folder, name))


def fake_set_options(path: str, tokenizers: str) -> list:
    """``--cfg-options`` a migrated config needs on the fake set."""
    from mmengine.config import Config

    cfg = Config.fromfile(path)
    opts = [
        'train_dataloader.batch_size=2',
        'train_dataloader.num_workers=0',
        'train_dataloader.persistent_workers=False',
    ]
    kind = (cfg.model.get('target_generator') or {}).get('type')
    if kind == 'PretrainedDALLETarget':
        opts.append('model.target_generator.init_cfg.checkpoint='
                    f'{tokenizers}/dalle.pth')  # fmt: skip
    elif kind == 'PretrainedVQKDTarget':
        opts.append('model.target_generator.init_cfg.checkpoint='
                    f'{tokenizers}/vqkd.pth')  # fmt: skip
    elif kind == 'PretrainedCLIPTarget':
        opts.append(f'model.target_generator.tokenizer_path={tokenizers}/'
                    'clip.pth')  # fmt: skip
    if cfg.model.type in ('DeepCluster', 'ODC', 'NPID'):
        opts.append(f'model.num_samples={NUM_IMAGES}')
    if cfg.model.type in ('DeepCluster', 'ODC'):
        opts += ['model.num_classes=2', 'model.head.num_classes=2']
    if cfg.model.type == 'ODC':
        opts.append('model.min_cluster=1')
    for i, hook in enumerate(cfg.get('custom_hooks', [])):
        if hook.get('type') == 'DeepClusterHook':
            opts += [f'custom_hooks.{i}.num_classes=2',
                     f'custom_hooks.{i}.pca_dim=4']  # fmt: skip
    return opts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('configs', help="MMSelfSup's configs/selfsup")
    parser.add_argument('--work-dir', required=True)
    parser.add_argument('--only', default='', help='substring of the path')
    parser.add_argument('--timeout', type=float, default=400)
    args = parser.parse_args(argv)
    out, logs = osp.join(args.work_dir, 'out'), osp.join(args.work_dir, 'logs')
    os.makedirs(logs, exist_ok=True)
    data, toks = (
        osp.join(args.work_dir, 'in1k'),
        osp.join(args.work_dir, 'tok'),
    )
    fake_imagenet(data)
    random_tokenizers(toks)
    tool = osp.join(ROOT, 'tools', 'misc', 'migrate_mmselfsup.py')
    migrate = [sys.executable, tool, args.configs, '-o', out + os.sep]
    subprocess.run(migrate + ['--quiet'], check=False)
    paths = sorted(
        p for p in glob.glob(osp.join(out, '**', '*.py'), recursive=True)
        if 'classification' not in p and args.only in p
    )  # fmt: skip
    passed = 0
    for path in paths:
        name = osp.splitext(osp.basename(path))[0]
        cmd = [sys.executable, osp.join(ROOT, 'tools/train.py'), path,
               '--work-dir', osp.join(args.work_dir, 'runs', name),
               '--max-iters', '1', '--cfg-options',
               f'train_dataloader.dataset.data_root={data}',
               *fake_set_options(path, toks)]  # fmt: skip
        start = time.time()
        with open(osp.join(logs, name + '.log'), 'w') as log:
            try:
                done = subprocess.run(
                    cmd, stdout=log, stderr=subprocess.STDOUT,
                    timeout=args.timeout,
                )  # fmt: skip
                rc = done.returncode
            except subprocess.TimeoutExpired:
                rc = 'timeout'
        passed += rc == 0
        print(f'{rc} {time.time() - start:.0f}s {name}', flush=True)
    print(f'{passed} of {len(paths)} migrated configs trained one iteration')
    return 0 if passed == len(paths) else 1


if __name__ == '__main__':
    sys.exit(main())
