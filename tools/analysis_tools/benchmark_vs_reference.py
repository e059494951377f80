# Copyright (c) mmssl contributors. All rights reserved.
"""Time mmssl against the reference DINOv2 code, interleaved in one process.

Both sides get the same crops (2 global crops at 224 and 8 local crops at
98 per image, ``--batch`` images, ViT-S/14) and run alternately, the order
flipping every repeat, so that machine load hits both alike. Two
measurements:

- ``backbone``: student forward + backward of the multi-crop batch with
  ``--drop-path`` (linear schedule on both sides);
- ``step``: a whole DINOv2 training step: teacher forward, student forward,
  DINO + iBOT + KoLeo losses with Sinkhorn-Knopp targets, backward,
  gradient clipping, AdamW with layer-wise lr decay, teacher EMA. mmssl runs
  the ViT-S/14 DINOv2 config; the reference side is assembled here from the
  reference's own modules (backbone, head, losses, parameter groups,
  update rule), since its training class needs xFormers and CUDA.

The reference code is imported from ``--reference-root`` (a checkout of
facebookresearch/dinov2); nothing of it is copied into mmssl. Results are
medians of ``--repeats`` timed repeats after ``--warmup`` untimed ones, with
the ratio reference / mmssl (above 1: mmssl is faster) and the machine load.

Example::

    python tools/analysis_tools/benchmark_vs_reference.py \\
        --reference-root /tmp/dinov2ref --repeats 10
    python tools/analysis_tools/benchmark_vs_reference.py \\
        --reference-root /tmp/dinov2ref --device cuda --batch 32 --amp
"""

import argparse
import os
import os.path as osp
import statistics
import sys
import tempfile
import time
import warnings

import torch

ROOT = osp.abspath(osp.join(osp.dirname(__file__), '..', '..'))
sys.path.insert(0, ROOT)

CONFIG = osp.join(ROOT, 'configs/dinov2/dinov2_vit-s14_8xb128-100e_in1k.py')


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--reference-root', required=True)
    parser.add_argument('--what', choices=['backbone', 'step', 'both'])
    parser.add_argument('--batch', type=int, default=2)
    parser.add_argument('--drop-path', type=float, default=0.4)
    parser.add_argument('--step-drop-path', type=float, default=None)
    parser.add_argument('--repeats', type=int, default=10)
    parser.add_argument('--warmup', type=int, default=2)
    parser.add_argument('--threads', type=int, default=1)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument(
        '--device', default='cpu', help='cpu or cuda (both sides alike)'
    )
    parser.add_argument(
        '--amp', action='store_true', help='bf16 autocast on both sides'
    )
    args = parser.parse_args(argv)
    args.what = args.what or 'both'
    return args


def load_reference(root):
    """Import the reference modules (xFormers is optional for them)."""
    os.environ.setdefault('XFORMERS_DISABLED', '1')
    sys.path.insert(0, osp.abspath(root))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        from dinov2.layers import DINOHead
        from dinov2.loss import DINOLoss, KoLeoLoss, iBOTPatchLoss
        from dinov2.models.vision_transformer import vit_small
        from dinov2.utils.param_groups import (
            fuse_params_groups,
            get_params_groups_with_decay,
        )
    return dict(
        vit_small=vit_small,
        DINOHead=DINOHead,
        DINOLoss=DINOLoss,
        iBOTPatchLoss=iBOTPatchLoss,
        KoLeoLoss=KoLeoLoss,
        groups=get_params_groups_with_decay,
        fuse=fuse_params_groups,
    )


def make_crops(batch, seed, device='cpu'):
    """Crops (global list, local list) and iBOT masks (2B, 256)."""
    gen = torch.Generator().manual_seed(seed)
    glob = [torch.randn(batch, 3, 224, 224, generator=gen) for _ in range(2)]
    loc = [torch.randn(batch, 3, 98, 98, generator=gen) for _ in range(8)]
    masks = torch.rand(2 * batch, 16 * 16, generator=gen) < 0.3
    masks[1::2] = False  # iBOT masks half of the crops
    glob = [x.to(device) for x in glob]
    loc = [x.to(device) for x in loc]
    return glob, loc, masks.to(device)


# ---------------------------------------------------------------- backbone
def build_backbones(ref, drop_path, device='cpu'):
    from mmssl.models.backbones import DINOVisionTransformer

    ours = DINOVisionTransformer(
        arch='small', img_size=224, drop_path_rate=drop_path, out_type='raw'
    )
    ours.init_weights()
    theirs = ref['vit_small'](
        patch_size=14,
        img_size=224,
        init_values=1e-5,
        block_chunks=0,
        drop_path_rate=drop_path,
    )
    return ours.train().to(device), theirs.train().to(device)


def backbone_fns(ref, args):
    ours, theirs = build_backbones(ref, args.drop_path, args.device)
    glob, loc, _ = make_crops(args.batch, args.seed, args.device)
    g, local = torch.cat(glob), torch.cat(loc)

    def run_ours():
        loss = sum(ours(x)[0].mean() for x in (g, local))
        loss.backward()

    def run_theirs():
        loss = sum(
            theirs.forward_features(x)['x_prenorm'].mean() for x in (g, local)
        )
        loss.backward()

    return run_ours, run_theirs


# -------------------------------------------------------------------- step
def build_mmssl_step(args):
    from mmengine.config import Config
    from mmengine.optim import build_optim_wrapper
    from mmpretrain.structures import DataSample

    from mmssl.registry import MODELS
    from mmssl.utils import register_all_modules

    register_all_modules()
    cfg = Config.fromfile(CONFIG)
    if args.step_drop_path is not None:
        cfg.model.backbone.drop_path_rate = args.step_drop_path
    model = MODELS.build(cfg.model)
    model.init_weights()
    model.train().to(args.device)
    model.teacher_temp = 0.07
    wrapper = build_optim_wrapper(model, cfg.optim_wrapper)
    glob, loc, masks = make_crops(args.batch, args.seed, args.device)
    per_image = masks.view(2, args.batch, 16, 16).transpose(0, 1)
    samples = []
    for b in range(args.batch):
        sample = DataSample()
        sample.set_field(per_image[b], 'mask', field_type='data')
        samples.append(sample)
    inputs = glob + loc

    def run():
        losses = model.loss(inputs, samples)
        loss, _ = model.parse_losses(losses)
        wrapper.update_params(loss)
        model.update_teacher(0.992)

    return run, cfg.model.backbone.drop_path_rate


class ReferenceStep:
    """One DINOv2 step assembled from the reference's modules, following
    its training loop (shared head for CLS and masked patches, Sinkhorn-
    Knopp targets, loss scalings, per-module clipping, fused groups)."""

    def __init__(self, ref, args, drop_path):
        self.student = self.build(ref, drop_path).to(args.device)
        # the head's weight norm cannot be deep-copied: build and load
        self.teacher = self.build(ref, drop_path).eval().to(args.device)
        self.teacher.load_state_dict(self.student.state_dict())
        self.teacher.requires_grad_(False)
        self.dino_loss = ref['DINOLoss'](65536).to(args.device)
        self.ibot_loss = ref['iBOTPatchLoss'](65536).to(args.device)
        self.koleo = ref['KoLeoLoss']()
        groups = []
        for module in self.student.values():
            groups += ref['groups'](
                module, lr_decay_rate=0.9, patch_embed_lr_mult=0.2
            )
        groups = list(ref['fuse'](groups))
        for g in groups:
            g['lr'] = 0.004 * g['lr_multiplier']
            g['weight_decay'] = 0.04 * g['wd_multiplier']
        self.optimizer = torch.optim.AdamW(groups, betas=(0.9, 0.999))
        glob, loc, masks = make_crops(args.batch, args.seed, args.device)
        self.glob, self.loc, self.masks = (
            torch.cat(glob),
            torch.cat(loc),
            masks,
        )
        self.idx = masks.flatten().nonzero().flatten()
        self.n_masked = torch.tensor([self.idx.numel()], device=args.device)
        counts = masks.sum(-1, keepdim=True).clamp(min=1).expand_as(masks)
        self.weights = (1 / counts)[masks]
        self.n_local = len(loc)

    @staticmethod
    def build(ref, drop_path):
        backbone = ref['vit_small'](
            patch_size=14,
            img_size=224,
            init_values=1e-5,
            block_chunks=0,
            drop_path_rate=drop_path,
        )
        head = ref['DINOHead'](
            in_dim=384,
            out_dim=65536,
            hidden_dim=2048,
            bottleneck_dim=256,
            nlayers=3,
        )
        return torch.nn.ModuleDict(dict(backbone=backbone, head=head))

    def teacher_targets(self, temp):
        out = self.teacher['backbone'](self.glob, is_training=True)
        cls = out['x_norm_clstoken'].chunk(2)
        cls = torch.cat((cls[1], cls[0]))  # crop A is matched to B
        patches = out['x_norm_patchtokens'].flatten(0, 1)[self.idx]
        logits = self.teacher['head'](torch.cat([cls, patches]))
        n = cls.shape[0]
        dino = self.dino_loss.sinkhorn_knopp_teacher(logits[:n], temp)
        ibot = self.ibot_loss.sinkhorn_knopp_teacher(
            logits[n:], temp, n_masked_patches_tensor=self.n_masked
        )
        return dino.view(2, -1, dino.shape[-1]), ibot

    def __call__(self):
        with torch.no_grad():
            t_dino, t_ibot = self.teacher_targets(0.07)
        backbone, head = self.student['backbone'], self.student['head']
        g = backbone(self.glob, masks=self.masks, is_training=True)
        loc = backbone(self.loc, is_training=True)
        patches = g['x_norm_patchtokens'].flatten(0, 1)[self.idx]
        s_loc, s_glob = loc['x_norm_clstoken'], g['x_norm_clstoken']
        out = head(torch.cat([s_loc, s_glob, patches]))
        n_l, n_g = s_loc.shape[0], s_glob.shape[0]
        terms = 2 * self.n_local + 2
        loss = self.dino_loss(out[:n_l].chunk(self.n_local), t_dino) / terms
        loss = (
            loss
            + 2
            * self.dino_loss([out[n_l : n_l + n_g]], [t_dino.flatten(0, 1)])
            / terms
        )
        loss = loss + 0.1 * sum(self.koleo(c) for c in s_glob.chunk(2))
        loss = loss + self.ibot_loss.forward_masked(
            out[n_l + n_g :],
            t_ibot,
            student_masks_flat=self.masks,
            n_masked_patches=self.idx.numel(),
            masks_weight=self.weights,
        )
        loss.backward()
        for module in self.student.values():
            torch.nn.utils.clip_grad_norm_(module.parameters(), 3.0)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        with torch.no_grad():
            t = list(self.teacher.parameters())
            s = list(self.student.parameters())
            torch._foreach_mul_(t, 0.992)
            torch._foreach_add_(t, s, alpha=1 - 0.992)


def init_single_process_group(device='cpu'):
    """The reference losses all-reduce unconditionally: one rank (gloo on
    CPU, nccl on CUDA)."""
    import torch.distributed as dist

    if not dist.is_initialized():
        path = tempfile.NamedTemporaryFile(delete=False).name
        backend = 'nccl' if str(device).startswith('cuda') else 'gloo'
        dist.init_process_group(
            backend, init_method=f'file://{path}', rank=0, world_size=1
        )


# ------------------------------------------------------------------ timing
def interleave(fns, repeats, warmup, device='cpu', amp=False):
    """Time ``fns`` (name -> callable) alternately; order flips each time.

    On CUDA the device is synchronised before and after each call, so a
    time is the whole call's device work; ``amp`` runs each call under
    bf16 autocast."""
    import contextlib

    cuda = str(device).startswith('cuda')
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    kind = 'cuda' if cuda else 'cpu'
    names = list(fns)
    times = {n: [] for n in names}
    for i in range(warmup + repeats):
        order = names if i % 2 == 0 else names[::-1]
        for name in order:
            ctx = (
                torch.autocast(kind, dtype=torch.bfloat16)
                if amp
                else contextlib.nullcontext()
            )
            sync()
            start = time.perf_counter()
            with ctx:
                fns[name]()
            sync()
            if i >= warmup:
                times[name].append(time.perf_counter() - start)
    return times


def peak_memory(device):
    """Peak CUDA memory since the last reset, in GiB ('' on CPU)."""
    if not str(device).startswith('cuda'):
        return ''
    peak = torch.cuda.max_memory_allocated() / 2**30
    torch.cuda.reset_peak_memory_stats()
    return f', peak CUDA memory of both sides {peak:.2f} GiB'


def report(title, times):
    ours, theirs = times['mmssl'], times['reference']
    pair = [t / o for o, t in zip(ours, theirs)]
    lines = [f'== {title} ({len(ours)} repeats)']
    for name, ts in times.items():
        q = statistics.quantiles(ts, n=4) if len(ts) > 1 else ts * 3
        lines.append(
            f'{name:>10}: median {statistics.median(ts):.3f} s '
            f'(IQR {q[0]:.3f}-{q[2]:.3f}, min {min(ts):.3f})'
        )
    lines.append(
        f'     ratio: reference/mmssl = '
        f'{statistics.median(theirs) / statistics.median(ours):.3f} '
        f'(median of per-repeat ratios {statistics.median(pair):.3f}, '
        f'range {min(pair):.3f}-{max(pair):.3f})'
    )
    print('\n'.join(lines), flush=True)


def load_average():
    try:
        return ' '.join(f'{x:.2f}' for x in os.getloadavg())
    except OSError:
        return 'unknown'


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    from mmengine.logging import MMLogger

    MMLogger.get_instance('mmengine').setLevel('WARNING')  # init reports
    ref = load_reference(args.reference_root)
    device = args.device
    where = device
    if device.startswith('cuda'):
        where = f'{device} ({torch.cuda.get_device_name(device)})'
    print(
        f'torch {torch.__version__}, {where}, {args.threads} thread(s), '
        f'batch {args.batch} (2x224 + 8x98 crops), '
        f'{"bf16 autocast" if args.amp else "fp32"}, '
        f'load average {load_average()}'
    )
    timing = dict(
        repeats=args.repeats, warmup=args.warmup, device=device, amp=args.amp
    )
    if args.what in ('backbone', 'both'):
        ours, theirs = backbone_fns(ref, args)
        times = interleave(dict(mmssl=ours, reference=theirs), **timing)
        report(
            f'ViT-S/14 forward+backward, drop_path_rate={args.drop_path}'
            + peak_memory(device),
            times,
        )
        del ours, theirs
    if args.what in ('step', 'both'):
        init_single_process_group(device)
        ours, drop_path = build_mmssl_step(args)
        theirs = ReferenceStep(ref, args, drop_path)
        times = interleave(dict(mmssl=ours, reference=theirs), **timing)
        report(
            f'whole DINOv2 step, drop_path_rate={drop_path}'
            + peak_memory(device),
            times,
        )
    print(f'load average at the end {load_average()}')


if __name__ == '__main__':
    main()
