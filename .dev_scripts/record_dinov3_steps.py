"""Record N training steps of facebookresearch/dinov3 as a test fixture.

The DINOv3 half of the full-step parity test
(tests/test_engine/test_dino_step_parity.py): this tool runs the
reference's own step from a checkout, on the CPU in float64, and writes a
small fixture that names its commit; the test runs mmssl's DINOv3 step
from the same weights and batch and compares every tensor::

    git clone https://github.com/facebookresearch/dinov3 /tmp/dinov3
    python .dev_scripts/record_dinov3_steps.py /tmp/dinov3 \\
        --out tests/data/parity/dinov3_steps.pt
    python .dev_scripts/record_dinov3_steps.py /tmp/dinov3 --gram \\
        --out tests/data/parity/dinov3_gram_steps.pt

What runs is the reference's code, with its ``ssl_default_config.yaml``:
``SSLMetaArch`` (``forward_backward``: targets, Sinkhorn-Knopp, the DINO
/ iBOT / KoLeo / Gram terms and scalings, the resized Gram-teacher
features; ``get_params_groups``, ``update_ema``, ``gram_load_ema_teacher``,
``update_gram``), ``build_schedulers``, ``apply_optim_scheduler``, the
collate function and mask generator. Written out here (``do_train`` also
builds loaders, checkpoints and distributed metrics): its loop body. The
model is built on ``meta`` as the reference does, moved to the CPU and
given random weights (its ``init_weights`` wants a Gram checkpoint).

Stubbed, because the reference imports them but the step does not use
them: ``omegaconf``, ``fvcore``, ``submitit``, ``termcolor`` (config,
checkpoint and logging modules), and ``Tensor.cuda`` (identity). The
RoPE runs in float64 (an ``fp64`` entry added to the reference's
``dtype_dict``; its training configs use bf16 or fp32), and
``Tensor.float`` keeps float64. The list is written into the fixture's
metadata.
"""

import argparse
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
import yaml

STUBS = (
    'omegaconf, fvcore, submitit, termcolor (any attribute: a no-op)',
    'torch.Tensor.cuda (identity: CPU run)',
    'torch.Tensor.float (identity on float64: the run stays float64)',
    "dtype_dict['fp64'] (RoPE in float64)",
    'model built on meta, moved to the CPU, random weights',
)

#: the run recorded (a tiny ViT; the test builds mmssl's model from it)
SETTINGS = dict(
    batch=2,
    global_size=16,
    local_size=8,
    gram_size=32,
    n_local=2,
    patch=4,
    embed=16,
    depth=2,
    heads=2,
    mlp_ratio=4.0,
    n_registers=1,
    n_prototypes=16,
    head_hidden=24,
    head_bottleneck=16,
    steps=4,
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
    gram=False,
    gram_weight=1.0,
    gram_update_frequency=2,
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

        def __call__(self, *args, **kwargs):
            return _Any()

        def __getattr__(self, key):
            return _Any()

    class _Module(types.ModuleType):
        def __getattr__(self, key):
            if key.startswith('__'):
                raise AttributeError(key)
            return _Any

    for name in (
        'omegaconf',
        'fvcore',
        'fvcore.common',
        'fvcore.common.checkpoint',
        'submitit',
        'termcolor',
    ):
        sys.modules[name] = _Module(name)
    torch.Tensor.cuda = lambda self, *a, **k: self
    as_float32 = torch.Tensor.float
    torch.Tensor.float = lambda self, *a, **k: (
        self if self.dtype == torch.float64 else as_float32(self, *a, **k)
    )


def reference_cfg(root, s):
    """ssl_default_config.yaml with the recorded run's values."""
    path = osp.join(root, 'dinov3', 'configs', 'ssl_default_config.yaml')
    with open(path) as f:
        cfg = yaml.safe_load(f)
    heads = dict(
        head_n_prototypes=s['n_prototypes'],
        head_bottleneck_dim=s['head_bottleneck'],
        head_hidden_dim=s['head_hidden'],
    )
    cfg['dino'].update(heads, koleo_loss_weight=s['koleo_weight'])
    cfg['ibot'].update(
        heads,
        mask_sample_probability=s['mask_probability'],
        mask_ratio_min_max=list(s['mask_ratio']),
    )
    cfg['gram'].update(
        use_loss=s['gram'],
        loss_weight=s['gram_weight'],
        it_load_ema_teacher=0,  # the EMA teacher before iteration 0
        img_level=True,  # per-image Gram matrices, as the Gram-anchor
        # stage's config (dinov3_vit7b16_gram_anchor.yaml)
        update_frequency=s['gram_update_frequency'],
    )
    cfg['train'].update(OFFICIAL_EPOCH_LENGTH=s['epoch_length'])
    cfg['student'].update(
        arch='vit_parity',
        patch_size=s['patch'],
        drop_path_rate=0.0,
        norm_layer='layernormbf16',  # eps 1e-5, as the ViT-7B configs
        n_storage_tokens=s['n_registers'],
        mask_k_bias=True,
    )
    cfg['teacher'].update(
        momentum_teacher=s['momentum'],
        final_momentum_teacher=s['final_momentum'],
        warmup_teacher_temp=s['warmup_teacher_temp'],
        teacher_temp=s['teacher_temp'],
        warmup_teacher_temp_epochs=s['warmup_teacher_temp_epochs'],
    )
    cfg['optim'].update(
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
    )
    cfg['crops'].update(
        global_crops_size=s['global_size'],
        local_crops_size=s['local_size'],
        local_crops_number=s['n_local'],
        gram_teacher_crops_size=s['gram_size'] if s['gram'] else None,
    )
    return _cfg(cfg)


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
    install_stubs()
    import_package(root, 'dinov3')
    import dinov3.models.vision_transformer as vits
    from dinov3.data.collate import collate_data_and_cast
    from dinov3.data.masking import MaskingGenerator
    from dinov3.train.ssl_meta_arch import SSLMetaArch
    from dinov3.train.train import apply_optim_scheduler, build_schedulers

    s = SETTINGS
    vits.dtype_dict['fp64'] = torch.float64

    def vit_parity(patch_size=16, **kw):
        kw['pos_embed_rope_dtype'] = 'fp64'
        return vits.DinoVisionTransformer(
            patch_size=patch_size,
            embed_dim=s['embed'],
            depth=s['depth'],
            num_heads=s['heads'],
            ffn_ratio=s['mlp_ratio'],
            **kw,
        )

    vits.vit_parity = vit_parity
    return types.SimpleNamespace(
        SSLMetaArch=SSLMetaArch,
        build_schedulers=build_schedulers,
        apply_optim_scheduler=apply_optim_scheduler,
        collate=collate_data_and_cast,
        MaskingGenerator=MaskingGenerator,
    )


def make_batch(s, collate, masking_generator):
    """The reference collate of random crops (and its iBOT masks)."""
    gen = torch.Generator().manual_seed(s['seed'])
    random.seed(s['seed'])
    np.random.seed(s['seed'])

    def crop(size):
        return torch.randn(3, size, size, generator=gen, dtype=torch.float64)

    def sample():
        out = dict(
            global_crops=[crop(s['global_size']) for _ in range(2)],
            local_crops=[crop(s['local_size']) for _ in range(s['n_local'])],
        )
        if s['gram']:
            out['gram_teacher_crops'] = [crop(s['gram_size']) for _ in '12']
        return out, ()

    samples = [sample() for _ in range(s['batch'])]
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
            else:
                p.copy_(0.3 * noise if p.ndim < 2 else noise / p.shape[-1])


def build_model(ref, cfg, s):
    """SSLMetaArch on meta -> CPU float64, random student = teacher."""
    model = ref.SSLMetaArch(cfg)
    model.to_empty(device='cpu')
    model.double()
    for group in ('student', 'teacher', 'gram_teacher'):
        backbone = getattr(model, group, None)
        if backbone is not None:
            backbone['backbone'].init_weights()  # RoPE periods, bias mask
    for k in ('dino_head', 'ibot_head'):
        model.student[k].init_weights()
    randomise(model.student, s['seed'])
    model.model_ema.load_state_dict(model.student.state_dict())
    model.train()
    return model


def state(modules):
    """``{module}.{key}`` -> a copy of each tensor of the modules."""
    return {
        f'{k}.{n}': p.detach().clone()
        for k, m in modules.items()
        for n, p in m.state_dict().items()
    }


def run_steps(ref, model, cfg, s, data):
    """``do_train``'s loop body for ``s['steps']`` iterations."""
    optimizer = torch.optim.AdamW(
        model.get_params_groups(), betas=(0.9, 0.999)
    )
    schedules = ref.build_schedulers(cfg)  # lr, wd, mom, temp, last lr
    gram = cfg.gram.use_loss
    data['global_batch_size'] = s['batch']
    out = dict(init=state(model.student), steps=[])
    for it in range(s['steps']):
        if gram and model.gram_it_load_ema_teacher == it:
            model.gram_load_ema_teacher()
        lr, wd, mom, temp, last_lr = (float(x[it]) for x in schedules)
        ref.apply_optim_scheduler(optimizer, lr, wd, last_lr)
        optimizer.zero_grad(set_to_none=True)
        _, losses = model.forward_backward(
            data, teacher_temp=temp, iteration=it
        )
        norms = {
            k: torch.nn.utils.clip_grad_norm_(v.parameters(), s['clip_grad'])
            for k, v in model.student.items()
        }
        optimizer.step()
        model.update_ema(mom)
        step = dict(
            schedule=dict(
                lr=lr, wd=wd, mom=mom, teacher_temp=temp, last_layer_lr=last_lr
            ),
            losses={
                k: torch.as_tensor(v).detach().clone()
                for k, v in losses.items()
                if k.endswith('loss')
            },
            grad_norms={k: v.detach().clone() for k, v in norms.items()},
            student=state(model.student),
            teacher=state(model.teacher),
        )
        freq = model.gram_update_frequency if gram else 0
        if gram and it % freq == 0:  # the Gram teacher used, when new
            step['gram_teacher'] = state(model.gram_teacher)
        if gram and it + 1 >= model.gram_it_first_update:
            if (it + 1) % freq == 0:
                model.update_gram()
        out['steps'].append(step)
    return out


def record(root, s):
    import torch.distributed as dist

    ref = load_reference(root)
    torch.manual_seed(s['seed'])
    if not dist.is_initialized():  # the losses all-reduce: one rank
        path = tempfile.NamedTemporaryFile(delete=False).name
        dist.init_process_group(
            'gloo', init_method=f'file://{path}', rank=0, world_size=1
        )
    cfg = reference_cfg(root, s)
    model = build_model(ref, cfg, s)
    data = make_batch(s, ref.collate, ref.MaskingGenerator)
    out = run_steps(ref, model, cfg, s, data)
    keys = ['collated_global_crops', 'collated_local_crops']
    keys += ['collated_masks', 'upperbound']
    if s['gram']:
        keys.append('collated_gram_teacher_crops')
    out['batch'] = {k: data[k] for k in keys}
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument(
        'reference_root', help='a facebookresearch/dinov3 checkout'
    )
    parser.add_argument('--gram', action='store_true', help='Gram on')
    parser.add_argument('--out', default='tests/data/parity/dinov3_steps.pt')
    args = parser.parse_args(argv)
    torch.set_default_dtype(torch.float64)
    commit = subprocess.run(
        ['git', '-C', args.reference_root, 'rev-parse', 'HEAD'],
        capture_output=True,
        text=True,
    ).stdout.strip() or os.environ.get('REFERENCE_COMMIT', 'unknown')
    settings = dict(SETTINGS, gram=args.gram)
    SETTINGS.update(settings)
    out = record(args.reference_root, settings)
    out['meta'] = dict(
        reference='facebookresearch/dinov3',
        commit=commit,
        stubs=list(STUBS),
        settings=settings,
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
