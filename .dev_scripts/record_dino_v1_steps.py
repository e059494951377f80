"""Record N training steps of facebookresearch/dino (DINO v1) as a fixture.

The DINO v1 half of the parity test (tests/test_engine/
test_dino_step_parity.py); see record_reference_steps.py for DINOv2::

    git clone https://github.com/facebookresearch/dino /tmp/dino
    python .dev_scripts/record_dino_v1_steps.py /tmp/dino \\
        --out tests/data/parity/dino_v1_steps.pt

What runs is the reference's own code, on the CPU in float64: its
``VisionTransformer``, ``DINOHead`` and ``MultiCropWrapper``, the
``DINOLoss`` of main_dino.py (centring, teacher-temperature schedule per
epoch), ``utils.get_params_groups``, ``utils.cosine_scheduler`` (lr, weight
decay, momentum), ``utils.clip_gradients`` (per tensor) and
``utils.cancel_gradients_last_layer``. The loop body of
``train_one_epoch`` (schedules into the groups, weight decay on the first
group only, backward, clip, cancel, step, EMA) is written out here because
it is a function over a data loader, CUDA and DDP. Nothing is stubbed
except ``Tensor.cuda`` (identity) and ``Tensor.float`` (kept float64).
"""

import argparse
import importlib.util
import os
import os.path as osp
import subprocess
import sys
import tempfile

import torch

STUBS = (
    'torch.Tensor.cuda (identity: CPU run)',
    'torch.Tensor.float (identity on float64: the run stays float64)',
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
    momentum=0.996,
    warmup_teacher_temp=0.04,
    teacher_temp=0.07,
    warmup_teacher_temp_epochs=2,
    freeze_last_layer=1,
    clip_grad=0.05,
    seed=0,
)


def import_module(root, name):
    """Import the checkout's top-level module ``name`` by its file, as
    ``name`` (so the checkout's own ``import utils`` finds it), without
    putting the checkout on ``sys.path``."""
    path = osp.join(osp.abspath(root), f'{name}.py')
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_reference(root):
    torch.Tensor.cuda = lambda self, *a, **k: self
    as_float32 = torch.Tensor.float
    torch.Tensor.float = lambda self, *a, **k: (
        self if self.dtype == torch.float64 else as_float32(self, *a, **k)
    )
    utils = import_module(root, 'utils')
    vits = import_module(root, 'vision_transformer')
    main_dino = import_module(root, 'main_dino')
    return main_dino, utils, vits


def build(vits, utils, s):
    backbone = vits.VisionTransformer(
        img_size=[s['global_size']],
        patch_size=s['patch'],
        embed_dim=s['embed'],
        depth=s['depth'],
        num_heads=s['heads'],
        mlp_ratio=s['mlp_ratio'],
        qkv_bias=True,
        norm_layer=lambda dim: torch.nn.LayerNorm(dim, eps=1e-6),
    )
    head = vits.DINOHead(
        s['embed'],
        s['n_prototypes'],
        use_bn=False,
        norm_last_layer=False,
        hidden_dim=s['head_hidden'],
        bottleneck_dim=s['head_bottleneck'],
    )
    return utils.MultiCropWrapper(backbone, head).double()


def randomise(model, seed):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=p.dtype)
            if 'norm' in name and 'weight' in name:
                p.copy_(1.0 + 0.2 * noise)
            elif 'weight_g' in name:
                p.copy_(1.0 + 0.1 * noise)
            else:
                p.copy_(0.3 * noise if p.ndim < 2 else noise / p.shape[-1])


def state(model):
    """``backbone.* / dino_head.*``, the key layout of the DINOv2 fixture."""
    return {
        k.replace('head.', 'dino_head.', 1) if k.startswith('head.') else k: (
            v.detach().clone()
        )
        for k, v in model.state_dict().items()
    }


def record(root):
    import torch.distributed as dist

    main_dino, utils, vits = load_reference(root)
    s = SETTINGS
    if not dist.is_initialized():  # update_center all-reduces: one rank
        path = tempfile.NamedTemporaryFile(delete=False).name
        dist.init_process_group(
            'gloo', init_method=f'file://{path}', rank=0, world_size=1
        )
    torch.manual_seed(s['seed'])
    student, teacher = build(vits, utils, s), build(vits, utils, s)
    randomise(student, s['seed'])
    teacher.load_state_dict(student.state_dict())
    for p in teacher.parameters():
        p.requires_grad = False
    n_crops = 2 + s['n_local']
    dino_loss = main_dino.DINOLoss(
        s['n_prototypes'],
        n_crops,
        s['warmup_teacher_temp'],
        s['teacher_temp'],
        s['warmup_teacher_temp_epochs'],
        s['epochs'],
    ).double()
    optimizer = torch.optim.AdamW(utils.get_params_groups(student))
    n_iter = s['epoch_length']
    lr_s = utils.cosine_scheduler(
        s['lr'], s['min_lr'], s['epochs'], n_iter, s['warmup_epochs']
    )
    wd_s = utils.cosine_scheduler(
        s['weight_decay'], s['weight_decay_end'], s['epochs'], n_iter
    )
    mom_s = utils.cosine_scheduler(s['momentum'], 1, s['epochs'], n_iter)
    gen = torch.Generator().manual_seed(s['seed'])
    views = [
        torch.randn(s['batch'], 3, size, size, generator=gen)
        for size in [s['global_size']] * 2 + [s['local_size']] * s['n_local']
    ]
    out = dict(init=state(student), steps=[], batch=dict(views=views))
    student.train()
    for it in range(s['steps']):
        epoch = it // n_iter
        for i, group in enumerate(optimizer.param_groups):
            group['lr'] = lr_s[it]
            if i == 0:  # only the first group is regularized
                group['weight_decay'] = wd_s[it]
        teacher_output = teacher(views[:2])
        student_output = student(views)
        loss = dino_loss(student_output, teacher_output, epoch)
        optimizer.zero_grad()
        loss.backward()
        norms = utils.clip_gradients(student, s['clip_grad'])
        utils.cancel_gradients_last_layer(
            epoch, student, s['freeze_last_layer']
        )
        optimizer.step()
        with torch.no_grad():
            m = mom_s[it]
            for q, k in zip(student.parameters(), teacher.parameters()):
                k.data.mul_(m).add_((1 - m) * q.detach().data)
        out['steps'].append(
            dict(
                schedule=dict(
                    lr=float(lr_s[it]),
                    wd=float(wd_s[it]),
                    mom=float(m),
                    teacher_temp=float(dino_loss.teacher_temp_schedule[epoch]),
                ),
                losses=dict(dino=loss.detach().clone()),
                grad_norms=torch.tensor(norms),
                student=state(student),
                teacher=state(teacher),
            )
        )
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument(
        'reference_root', help='a facebookresearch/dino checkout'
    )
    parser.add_argument('--out', default='tests/data/parity/dino_v1_steps.pt')
    args = parser.parse_args(argv)
    torch.set_default_dtype(torch.float64)
    commit = subprocess.run(
        ['git', '-C', args.reference_root, 'rev-parse', 'HEAD'],
        capture_output=True,
        text=True,
    ).stdout.strip() or os.environ.get('REFERENCE_COMMIT', 'unknown')
    out = record(args.reference_root)
    out['meta'] = dict(
        reference='facebookresearch/dino',
        commit=commit,
        stubs=list(STUBS),
        settings=SETTINGS,
        torch=torch.__version__,
        dtype='float64',
    )
    os.makedirs(osp.dirname(osp.abspath(args.out)), exist_ok=True)
    torch.save(out, args.out)
    print(f'wrote {args.out} ({osp.getsize(args.out) / 1024:.0f} KiB)')
    for i, step in enumerate(out['steps']):
        norms = step['grad_norms']
        clipped = int((norms > SETTINGS['clip_grad']).sum())
        print(
            i,
            step['schedule'],
            float(step['losses']['dino']),
            f'{clipped}/{len(norms)} tensors clipped',
        )


if __name__ == '__main__':
    main()
