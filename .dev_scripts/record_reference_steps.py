"""Record N training steps of facebookresearch/dinov2 as a test fixture.

The parity test (tests/test_engine/test_dino_step_parity.py) runs mmssl's
DINOv2 step from the same weights and batch and compares every tensor and
loss term with what this tool records. The reference cannot be imported
in CI (no network, it needs xFormers and a GPU), so this tool runs it from
a checkout and writes a small float64 fixture that names its commit::

    git clone https://github.com/facebookresearch/dinov2 /tmp/dinov2
    python .dev_scripts/record_reference_steps.py /tmp/dinov2 \\
        --out tests/data/parity/dinov2_steps.pt

What runs is the reference's own code, on the CPU in float64:
``SSLMetaArch.forward_backward`` (teacher targets, Sinkhorn-Knopp, the
loss terms and their scalings), ``get_params_groups`` (decay, lr
multipliers, fusing), ``build_schedulers`` and ``apply_optim_scheduler``
of ``dinov2/train/train.py`` (lr, wd, momentum, teacher temperature,
last-layer lr), the collate function and its mask generator. Re-written
here, because in the reference they are FSDP methods or CUDA-only: the
loop body of ``do_train`` (zero_grad, forward_backward, clip each student
module with ``clip_grad_norm_``, ``optimizer.step``, EMA), and
``update_teacher`` (the same ``_foreach`` EMA over plain modules).

Stubbed, because the reference imports them but the step does not use
them: ``fvcore`` (checkpointers), ``omegaconf`` (config files),
``xformers.ops.fmha`` (``BlockDiagonalMask``: concatenation and split of
the head inputs, done here with ``torch.cat``/``split``; the backbone runs
each crop size on its own instead of as a nested list), and
``Tensor.cuda`` (identity). The list of stubs is written into the
fixture's metadata.
"""

import argparse
import functools
import importlib.util
import os
import os.path as osp
import random
import subprocess
import sys
import tempfile
import types

import numpy as np
import torch

STUBS = (
    'fvcore.common.checkpoint (Checkpointer, PeriodicCheckpointer)',
    'omegaconf (OmegaConf)',
    'xformers.ops.fmha.BlockDiagonalMask (torch.cat / split)',
    'torch.Tensor.cuda (identity: CPU run)',
    'torch.Tensor.float (identity on float64: the run stays float64)',
    'backbone([globals, locals], masks=[m, None]): one call per crop size',
)

#: the run recorded (a tiny ViT; the test builds mmssl's model from it)
SETTINGS = dict(
    batch=2,
    global_size=16,
    local_size=8,
    n_local=2,
    patch=4,
    embed=16,
    depth=2,
    heads=2,
    mlp_ratio=4.0,
    n_prototypes=32,
    head_hidden=32,
    head_bottleneck=16,
    steps=5,
    epoch_length=2,
    epochs=10,
    lr=5e-3,
    min_lr=1e-6,
    warmup_epochs=2,
    weight_decay=0.04,
    weight_decay_end=0.4,
    momentum=0.992,
    final_momentum=1.0,
    warmup_teacher_temp=0.04,
    teacher_temp=0.07,
    warmup_teacher_temp_epochs=1,
    freeze_last_layer_epochs=1,
    clip_grad=0.3,
    layerwise_decay=0.9,
    patch_embed_lr_mult=0.2,
    koleo_weight=0.1,
    mask_ratio=(0.1, 0.5),
    mask_probability=0.5,
    seed=0,
)


class Cfg(dict):
    """Attribute and item access, as the reference reads its OmegaConf."""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError as err:
            raise AttributeError(key) from err


def _cfg(d):
    if isinstance(d, dict):
        return Cfg({k: _cfg(v) for k, v in d.items()})
    return d


def install_stubs():
    """Modules the reference imports but the recorded step never uses."""

    class _Any:
        def __init__(self, *args, **kwargs):
            pass

        @staticmethod
        def load(*args, **kwargs):  # OmegaConf.load of the yaml defaults
            return None

    class BlockDiagonalMask:
        def __init__(self, sizes):
            self.sizes = sizes

        @classmethod
        def from_tensor_list(cls, tensors):
            sizes = [t.shape[1] for t in tensors]
            return cls(sizes), torch.cat(tensors, dim=1)

        def split(self, x):
            return list(x.split(self.sizes, dim=1))

    fvcore = types.ModuleType('fvcore')
    common = types.ModuleType('fvcore.common')
    ckpt = types.ModuleType('fvcore.common.checkpoint')
    ckpt.Checkpointer = ckpt.PeriodicCheckpointer = _Any
    omegaconf = types.ModuleType('omegaconf')
    omegaconf.OmegaConf = _Any
    xformers = types.ModuleType('xformers')
    ops = types.ModuleType('xformers.ops')
    ops.fmha = types.SimpleNamespace(BlockDiagonalMask=BlockDiagonalMask)
    sys.modules.update(
        {
            'fvcore': fvcore,
            'fvcore.common': common,
            'fvcore.common.checkpoint': ckpt,
            'omegaconf': omegaconf,
            'xformers': xformers,
            'xformers.ops': ops,
        }
    )
    torch.Tensor.cuda = lambda self, *a, **k: self
    as_float32 = torch.Tensor.float
    # the reference's .float() casts (Sinkhorn-Knopp targets, pos-embed
    # interpolation) keep this float64 run in float64
    torch.Tensor.float = lambda self, *a, **k: (
        self if self.dtype == torch.float64 else as_float32(self, *a, **k)
    )


def reference_cfg(s):
    """The reference config of the recorded run (ssl_default_config keys)."""
    return _cfg(
        dict(
            compute_precision=dict(grad_scaler=False),
            dino=dict(
                loss_weight=1.0,
                head_n_prototypes=s['n_prototypes'],
                head_bottleneck_dim=s['head_bottleneck'],
                head_nlayers=3,
                head_hidden_dim=s['head_hidden'],
                koleo_loss_weight=s['koleo_weight'],
            ),
            ibot=dict(
                loss_weight=1.0,
                mask_sample_probability=s['mask_probability'],
                mask_ratio_min_max=list(s['mask_ratio']),
                separate_head=False,
            ),
            train=dict(
                OFFICIAL_EPOCH_LENGTH=s['epoch_length'],
                centering='sinkhorn_knopp',
            ),
            student=dict(
                arch='vit_parity',
                patch_size=s['patch'],
                drop_path_rate=0.0,
                layerscale=1e-5,
                drop_path_uniform=True,
                pretrained_weights='',
                ffn_layer='mlp',
                block_chunks=0,
                qkv_bias=True,
                proj_bias=True,
                ffn_bias=True,
                num_register_tokens=0,
                interpolate_antialias=False,
                interpolate_offset=0.1,
            ),
            teacher=dict(
                momentum_teacher=s['momentum'],
                final_momentum_teacher=s['final_momentum'],
                warmup_teacher_temp=s['warmup_teacher_temp'],
                teacher_temp=s['teacher_temp'],
                warmup_teacher_temp_epochs=s['warmup_teacher_temp_epochs'],
            ),
            optim=dict(
                epochs=s['epochs'],
                weight_decay=s['weight_decay'],
                weight_decay_end=s['weight_decay_end'],
                lr=s['lr'],
                warmup_epochs=s['warmup_epochs'],
                min_lr=s['min_lr'],
                clip_grad=s['clip_grad'],
                freeze_last_layer_epochs=s['freeze_last_layer_epochs'],
                patch_embed_lr_mult=s['patch_embed_lr_mult'],
                layerwise_decay=s['layerwise_decay'],
                adamw_beta1=0.9,
                adamw_beta2=0.999,
            ),
            crops=dict(
                global_crops_size=s['global_size'],
                local_crops_number=s['n_local'],
            ),
        )
    )


def make_batch(s, collate, masking_generator):
    """The reference collate of random crops (and its iBOT masks)."""
    gen = torch.Generator().manual_seed(s['seed'])
    random.seed(s['seed'])
    np.random.seed(s['seed'])

    def crop(size):
        return torch.randn(3, size, size, generator=gen, dtype=torch.float64)

    samples = [
        (
            dict(
                global_crops=[crop(s['global_size']) for _ in range(2)],
                local_crops=[
                    crop(s['local_size']) for _ in range(s['n_local'])
                ],
            ),
            (),
        )
        for _ in range(s['batch'])
    ]
    grid = s['global_size'] // s['patch']
    return collate(
        samples,
        mask_ratio_tuple=tuple(s['mask_ratio']),
        mask_probability=s['mask_probability'],
        n_tokens=grid * grid,
        mask_generator=masking_generator(
            input_size=(grid, grid), max_num_patches=0.5 * grid * grid
        ),
        dtype=torch.float64,
    )


def randomise(model, seed):
    """Random weights everywhere (LayerScale, norms, tokens too), so every
    parameter matters in the step."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=p.dtype)
            if name.endswith('gamma') or 'norm' in name and 'weight' in name:
                p.copy_(1.0 + 0.2 * noise if 'norm' in name else 0.5 * noise)
            elif 'weight_g' in name:
                p.copy_(1.0 + 0.1 * noise)
            else:
                p.copy_(0.3 * noise if p.ndim < 2 else noise / p.shape[-1])


def import_package(root, name):
    """Import the checkout's package ``name`` (its submodules then import
    as usual) without putting the checkout on ``sys.path``."""
    folder = osp.join(osp.abspath(root), name)
    spec = importlib.util.spec_from_file_location(
        name,
        osp.join(folder, '__init__.py'),
        submodule_search_locations=[folder],
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_reference(root):
    os.environ.setdefault('XFORMERS_DISABLED', '1')
    install_stubs()
    import_package(root, 'dinov2')
    import dinov2.models.vision_transformer as vits
    from dinov2.data import MaskingGenerator, collate_data_and_cast
    from dinov2.layers import MemEffAttention
    from dinov2.layers import NestedTensorBlock as Block
    from dinov2.train.ssl_meta_arch import SSLMetaArch
    from dinov2.train.train import apply_optim_scheduler, build_schedulers

    s = SETTINGS
    vits.vit_parity = lambda patch_size=16, num_register_tokens=0, **kw: (
        vits.DinoVisionTransformer(
            patch_size=patch_size,
            embed_dim=s['embed'],
            depth=s['depth'],
            num_heads=s['heads'],
            mlp_ratio=s['mlp_ratio'],
            block_fn=functools.partial(Block, attn_class=MemEffAttention),
            num_register_tokens=num_register_tokens,
            **kw,
        )
    )
    return types.SimpleNamespace(
        SSLMetaArch=SSLMetaArch,
        build_schedulers=build_schedulers,
        apply_optim_scheduler=apply_optim_scheduler,
        collate=collate_data_and_cast,
        MaskingGenerator=MaskingGenerator,
    )


def per_crop_size(backbone):
    """The reference student runs ``backbone([g, l], masks=[m, None])`` as
    one nested (xFormers) pass; here one pass per crop size."""
    forward = backbone.forward

    def run(x, masks=None, is_training=False):
        if isinstance(x, list):
            return [
                forward(xi, masks=mi, is_training=is_training)
                for xi, mi in zip(x, masks)
            ]
        return forward(x, masks=masks, is_training=is_training)

    backbone.forward = run


def update_teacher(model, m):
    """``SSLMetaArch.update_teacher`` without FSDP: the same _foreach EMA
    over each student module's parameters."""
    with torch.no_grad():
        for k in model.student.keys():
            s = list(model.student[k].parameters())
            t = list(model.teacher[k].parameters())
            torch._foreach_mul_(t, m)
            torch._foreach_add_(t, s, alpha=1 - m)


def record(root):
    import torch.distributed as dist

    ref = load_reference(root)
    s = SETTINGS
    torch.manual_seed(s['seed'])
    if not dist.is_initialized():  # the losses all-reduce: one rank
        path = tempfile.NamedTemporaryFile(delete=False).name
        dist.init_process_group(
            'gloo', init_method=f'file://{path}', rank=0, world_size=1
        )
    cfg = reference_cfg(s)
    model = ref.SSLMetaArch(cfg).double()
    randomise(model.student, s['seed'])
    for k in model.student.keys():  # prepare_for_distributed_training
        model.teacher[k].load_state_dict(model.student[k].state_dict())
    model.need_to_synchronize_fsdp_streams = False
    per_crop_size(model.student.backbone)
    per_crop_size(model.teacher.backbone)
    model.train()
    data = make_batch(s, ref.collate, ref.MaskingGenerator)
    optimizer = torch.optim.AdamW(
        model.get_params_groups(), betas=(0.9, 0.999)
    )
    lr_s, wd_s, mom_s, temp_s, ll_s = ref.build_schedulers(cfg)

    def state(modules):
        return {
            f'{k}.{n}': p.detach().clone()
            for k, m in modules.items()
            for n, p in m.state_dict().items()
        }

    out = dict(init=state(model.student), steps=[])
    for it in range(s['steps']):
        lr, wd, mom = lr_s[it], wd_s[it], mom_s[it]
        temp, last_lr = temp_s[it], ll_s[it]
        ref.apply_optim_scheduler(optimizer, lr, wd, last_lr)
        optimizer.zero_grad(set_to_none=True)
        losses = model.forward_backward(data, teacher_temp=temp)
        norms = {
            k: torch.nn.utils.clip_grad_norm_(v.parameters(), s['clip_grad'])
            for k, v in model.student.items()
        }
        optimizer.step()
        update_teacher(model, mom)
        out['steps'].append(
            dict(
                schedule=dict(
                    lr=float(lr),
                    wd=float(wd),
                    mom=float(mom),
                    teacher_temp=float(temp),
                    last_layer_lr=float(last_lr),
                ),
                losses={k: v.detach().clone() for k, v in losses.items()},
                grad_norms={k: v.detach().clone() for k, v in norms.items()},
                student=state(model.student),
                teacher=state(model.teacher),
            )
        )
    out['batch'] = {
        k: data[k]
        for k in (
            'collated_global_crops',
            'collated_local_crops',
            'collated_masks',
            'upperbound',
        )
    }
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument(
        'reference_root', help='a facebookresearch/dinov2 checkout'
    )
    parser.add_argument('--out', default='tests/data/parity/dinov2_steps.pt')
    args = parser.parse_args(argv)
    torch.set_default_dtype(torch.float64)
    commit = subprocess.run(
        ['git', '-C', args.reference_root, 'rev-parse', 'HEAD'],
        capture_output=True,
        text=True,
    ).stdout.strip() or os.environ.get('REFERENCE_COMMIT', 'unknown')
    out = record(args.reference_root)
    out['meta'] = dict(
        reference='facebookresearch/dinov2',
        commit=commit,
        stubs=list(STUBS),
        settings=SETTINGS,
        torch=torch.__version__,
        dtype='float64',
    )
    os.makedirs(osp.dirname(osp.abspath(args.out)), exist_ok=True)
    torch.save(out, args.out)
    size = osp.getsize(args.out)
    print(f'wrote {args.out} ({size / 1024:.0f} KiB), {commit}')
    for i, step in enumerate(out['steps']):
        terms = {k: round(float(v), 6) for k, v in step['losses'].items()}
        norms = {k: round(float(v), 4) for k, v in step['grad_norms'].items()}
        print(i, step['schedule'], terms, norms)


if __name__ == '__main__':
    main()
