# Copyright (c) mmssl contributors. All rights reserved.
"""The reference DINOv2 side of ``benchmark_vs_reference.py``.

Imports facebookresearch/dinov2 from a checkout at run time and assembles
its training step from its own modules; nothing of it is copied here.
"""

import os
import os.path as osp
import sys
import tempfile
import warnings

import torch


def load_reference(root):
    """Import the reference modules (xFormers is optional for them)."""
    os.environ.setdefault('XFORMERS_DISABLED', '1')
    sys.path.insert(0, osp.abspath(root))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        from dinov2.layers import DINOHead
        from dinov2.loss import DINOLoss, KoLeoLoss, iBOTPatchLoss
        from dinov2.models.vision_transformer import vit_large, vit_small
        from dinov2.utils.param_groups import (
            fuse_params_groups,
            get_params_groups_with_decay,
        )
    return dict(
        vit_small=vit_small,
        vit_large=vit_large,
        DINOHead=DINOHead,
        DINOLoss=DINOLoss,
        iBOTPatchLoss=iBOTPatchLoss,
        KoLeoLoss=KoLeoLoss,
        groups=get_params_groups_with_decay,
        fuse=fuse_params_groups,
    )


def reference_vit(ref, drop_path, arch='small'):
    """The reference ViT-S/14 or ViT-L/14 (LayerScale 1e-5, no block
    chunks)."""
    return ref[f'vit_{arch}'](
        patch_size=14,
        img_size=224,
        init_values=1e-5,
        block_chunks=0,
        drop_path_rate=drop_path,
    )


def reference_vit_small(ref, drop_path):
    """The reference ViT-S/14 (see :func:`reference_vit`)."""
    return reference_vit(ref, drop_path, 'small')


class ReferenceStep:
    """One DINOv2 step assembled from the reference's modules, following
    its training loop (shared head for CLS and masked patches, Sinkhorn-
    Knopp targets, loss scalings, per-module clipping, fused groups).

    Args:
        ref (dict): :func:`load_reference`'s modules.
        crops (tuple): Global crops list, local crops list and iBOT masks
            (2B, 256), as ``speed_vs_reference.make_crops`` makes them.
        drop_path (float): Stochastic depth rate of the last block.
        device (str): Where to run.
        arch (str): ``'small'`` (ViT-S/14) or ``'large'`` (ViT-L/14).
    """

    def __init__(self, ref, crops, drop_path, device='cpu', arch='small'):
        self.student = self.build(ref, drop_path, arch).to(device)
        # the head's weight norm cannot be deep-copied: build and load
        self.teacher = self.build(ref, drop_path, arch).eval().to(device)
        self.teacher.load_state_dict(self.student.state_dict())
        self.teacher.requires_grad_(False)
        self.dino_loss = ref['DINOLoss'](65536).to(device)
        self.ibot_loss = ref['iBOTPatchLoss'](65536).to(device)
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
        glob, loc, masks = crops
        self.glob, self.loc = torch.cat(glob), torch.cat(loc)
        self.masks = masks
        self.idx = masks.flatten().nonzero().flatten()
        self.n_masked = torch.tensor([self.idx.numel()], device=device)
        counts = masks.sum(-1, keepdim=True).clamp(min=1).expand_as(masks)
        self.weights = (1 / counts)[masks]
        self.n_local = len(loc)

    @staticmethod
    def build(ref, drop_path, arch='small'):
        backbone = reference_vit(ref, drop_path, arch)
        head = ref['DINOHead'](
            in_dim=backbone.embed_dim,
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
