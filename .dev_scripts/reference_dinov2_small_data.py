"""Train facebookresearch/dinov2's own step on the demo digits, small scale.

Answers one question for docs/dev/dino_fixed_point_history.md: does the
reference's DINO loss sit at ln K too, at the size of mmssl's DINOv2
digits demo (a 4-block ViT of width 64, 4-px patches, 2 global 32-px and
4 local 16-px crops, K prototypes, batch 64, 22 iterations an epoch)?
What runs is the reference's code (``SSLMetaArch.forward_backward``, its
``DataAugmentationDINO``, collate and mask generator, parameter groups and
schedules), through the CPU stand-ins of record_reference_steps.py (the
loop body, per-module clipping, the EMA), in float32. The recipe is the
reference's ``ssl_default_config.yaml`` (EMA centering, teacher
temperature 0.04 -> 0.07 over 30 % of the run, momentum 0.992 -> 1,
LayerScale 1e-5, lr 0.004 x sqrt(64 / 1024) = 1e-3, clip 3.0) unless a
flag changes it. At the end: kNN top-1 (k 20, T 0.07, mmssl's
``weighted_knn_scores``) of the teacher's CLS token on data/demo/val,
before and after training::

    git clone https://github.com/facebookresearch/dinov2 /tmp/dinov2
    python .dev_scripts/reference_dinov2_small_data.py /tmp/dinov2 \\
        --epochs 10 [--centering sinkhorn_knopp] [--layerscale 0]
"""

import argparse
import importlib.util
import math
import os
import os.path as osp
import random
import tempfile

import numpy as np
import torch
from PIL import Image

from mmssl.evaluation.functional import weighted_knn_scores

HERE = osp.dirname(osp.abspath(__file__))


def _recorder():
    path = osp.join(HERE, 'record_reference_steps.py')
    spec = importlib.util.spec_from_file_location('_rec', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _images(root):
    items = []
    for label in sorted(os.listdir(root)):
        folder = osp.join(root, label)
        for name in sorted(os.listdir(folder)):
            items.append((osp.join(folder, name), int(label)))
    return items


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('reference_root')
    p.add_argument('--data', default='data/demo')
    p.add_argument('--epochs', type=int, default=10)
    p.add_argument('--n-prototypes', type=int, default=256)
    p.add_argument('--centering', default='centering')
    p.add_argument('--layerscale', type=float, default=1e-5)
    p.add_argument('--momentum', type=float, default=0.992)
    p.add_argument('--final-momentum', type=float, default=1.0)
    p.add_argument('--teacher-temp', type=float, default=0.07)
    p.add_argument('--warmup-teacher-temp', type=float, default=0.04)
    p.add_argument('--temp-warmup-frac', type=float, default=0.3)
    p.add_argument('--lr', type=float, default=1e-3)
    p.add_argument('--n-local', type=int, default=4)
    p.add_argument('--seed', type=int, default=0)
    return p.parse_args(argv)


def build(rec, args):
    s = rec.SETTINGS
    s.update(
        batch=64,
        global_size=32,
        local_size=16,
        n_local=args.n_local,
        patch=4,
        embed=64,
        depth=4,
        heads=4,
        n_prototypes=args.n_prototypes,
        head_hidden=256,
        head_bottleneck=64,
        epoch_length=22,
        epochs=args.epochs,
        lr=args.lr,
        warmup_epochs=max(1, round(0.1 * args.epochs)),
        momentum=args.momentum,
        final_momentum=args.final_momentum,
        warmup_teacher_temp=args.warmup_teacher_temp,
        teacher_temp=args.teacher_temp,
        warmup_teacher_temp_epochs=max(
            1, round(args.temp_warmup_frac * args.epochs)
        ),
        freeze_last_layer_epochs=1,
        clip_grad=3.0,
        seed=args.seed,
    )
    ref = rec.load_reference(args.reference_root)
    cfg = rec.reference_cfg(s)
    cfg.train.centering = args.centering
    cfg.student.layerscale = args.layerscale or None
    return ref, cfg


def knn(backbone, args):
    from dinov2.data.transforms import make_normalize_transform
    from torchvision import transforms

    tf = transforms.Compose(
        [transforms.ToTensor(), make_normalize_transform()]
    )

    def feats(split):
        rows = _images(osp.join(args.data, split))
        x = torch.stack([tf(Image.open(p).convert('RGB')) for p, _ in rows])
        with torch.no_grad():
            f = torch.cat(
                [
                    backbone(x[i : i + 256], is_training=True)[
                        'x_norm_clstoken'
                    ]
                    for i in range(0, len(x), 256)
                ]
            )
        return f, torch.tensor([y for _, y in rows])

    bank, bank_y = feats('train')
    query, query_y = feats('val')
    scores = weighted_knn_scores(query, bank, bank_y, int(bank_y.max()) + 1)
    return 100.0 * (scores.argmax(1) == query_y).float().mean().item()


def main(argv=None):
    import torch.distributed as dist

    args = parse_args(argv)
    rec = _recorder()
    ref, cfg = build(rec, args)
    from dinov2.data.augmentations import DataAugmentationDINO

    s = rec.SETTINGS
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    np.random.seed(args.seed)
    if not dist.is_initialized():
        path = tempfile.NamedTemporaryFile(delete=False).name
        dist.init_process_group(
            'gloo', init_method=f'file://{path}', rank=0, world_size=1
        )
    model = ref.SSLMetaArch(cfg)
    for k in model.student.keys():
        model.teacher[k].load_state_dict(model.student[k].state_dict())
    model.need_to_synchronize_fsdp_streams = False
    rec.per_crop_size(model.student.backbone)
    rec.per_crop_size(model.teacher.backbone)
    items = _images(osp.join(args.data, 'train'))
    init = knn(model.teacher.backbone, args)
    print('knn random init', round(init, 2))
    model.train()
    aug = DataAugmentationDINO((0.32, 1.0), (0.05, 0.32), s['n_local'], 32, 16)
    grid = s['global_size'] // s['patch']
    masks = ref.MaskingGenerator(
        input_size=(grid, grid), max_num_patches=0.5 * grid * grid
    )
    optimizer = torch.optim.AdamW(
        model.get_params_groups(), betas=(0.9, 0.999)
    )
    lr_s, wd_s, mom_s, temp_s, ll_s = ref.build_schedulers(cfg)
    images = [Image.open(p).convert('RGB') for p, _ in items]
    it, log = 0, []
    for epoch in range(s['epochs']):
        order = torch.randperm(len(images)).tolist()
        for b in range(s['epoch_length']):
            idx = order[b * 64 : (b + 1) * 64]
            data = ref.collate(
                [(aug(images[i]), ()) for i in idx],
                mask_ratio_tuple=tuple(s['mask_ratio']),
                mask_probability=s['mask_probability'],
                n_tokens=grid * grid,
                mask_generator=masks,
                dtype=torch.float32,
            )
            ref.apply_optim_scheduler(optimizer, lr_s[it], wd_s[it], ll_s[it])
            optimizer.zero_grad(set_to_none=True)
            losses = model.forward_backward(data, teacher_temp=temp_s[it])
            for v in model.student.values():
                torch.nn.utils.clip_grad_norm_(v.parameters(), 3.0)
            optimizer.step()
            rec.update_teacher(model, mom_s[it])
            # local + global: the mean CE over all pairs, mmssl's loss_dino
            log.append(
                float(losses['dino_local_crops_loss'])
                + float(losses['dino_global_crops_loss'])
            )
            it += 1
            if it % 22 == 0:
                lnk = math.log(s['n_prototypes'])
                mean = sum(log[-10:]) / 10
                print(
                    f'epoch {epoch + 1} it {it} loss_dino {mean:.4f} '
                    f'= {mean / lnk:.3f} ln K, '
                    + ' '.join(
                        f'{k} {float(v):.4f}' for k, v in losses.items()
                    ),
                    flush=True,
                )
    print('knn trained', round(knn(model.teacher.backbone, args), 2))


if __name__ == '__main__':
    main()
