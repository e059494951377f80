"""Model FLOPs of a DINO-family training step, per image, from a config.

Counted once here for ``tools/analysis_tools/benchmark_train.py`` (MFU)
and the docs. The count is analytic: the matrix multiplications of the
ViT (patch embedding, qkv, attention scores and values, projection, FFN)
and of the DINO heads, 2 FLOPs per multiply-add; norms, softmax and
activations are left out, as in the usual model-FLOPs utilisation (MFU)
definition (Chowdhery et al. 2022, PaLM, https://arxiv.org/abs/2204.02311,
appendix B). A trained pass costs 3x its forward (backward = 2x
forward); the teacher only runs forward. For the DINOv2 ViT-S/14 recipe
with 2x224 + 8x98 crops this gives about 166 GFLOP per image.
"""

import inspect
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

#: datasheet dense peak TFLOP/s per GPU: (bf16/fp16, tf32), for MFU
PEAK_TFLOPS = {
    'H200': (989.4, 494.7),
    'H100': (989.4, 494.7),  # SXM; the PCIe card: --peak-tflops 756
    'A100': (312.0, 156.0),
}


def peak_tflops(device_name: str, bf16: bool = True) -> Optional[float]:
    """Datasheet peak of a GPU named like ``torch.cuda.get_device_name``
    (None when unknown)."""
    for key, (half, tf32) in PEAK_TFLOPS.items():
        if key in device_name.upper():
            return half if bf16 else tf32
    return None


def vit_forward_flops(
    num_patches: int,
    embed_dims: int,
    num_layers: int,
    ffn_dims: int,
    num_extra_tokens: int = 1,
    patch_dims: int = 3 * 14 * 14,
    swiglu: bool = False,
) -> int:
    """Matmul FLOPs of one ViT forward on one image.

    Args:
        num_patches (int): Patch tokens N.
        embed_dims (int): Width C.
        num_layers (int): Blocks L.
        ffn_dims (int): FFN hidden width (for SwiGLU: the width of each of
            its two input projections).
        num_extra_tokens (int): CLS + registers.
        patch_dims (int): Inputs per patch (channels x patch area).
        swiglu (bool): SwiGLU FFN (two input projections) instead of MLP.

    Returns:
        int: ``2 N P C`` (patch embedding) plus, per block and token T =
        N + extra: ``2 T (4 C^2)`` (qkv, projection), ``2 T C F (2 or 3)``
        (FFN) and ``4 T^2 C`` (scores and weighted values).
    """
    t, c = num_patches + num_extra_tokens, embed_dims
    ffn = (3 if swiglu else 2) * c * ffn_dims
    block = 2 * t * (4 * c * c + ffn) + 4 * t * t * c
    return 2 * num_patches * patch_dims * c + num_layers * block


def head_forward_flops(
    in_dims: int,
    n_prototypes: int,
    hidden_dims: int = 2048,
    bottleneck_dims: int = 256,
    nlayers: int = 3,
) -> int:
    """Matmul FLOPs of one ``DINOHead`` row (MLP + prototypes)."""
    dims = [in_dims] + [hidden_dims] * (nlayers - 1) + [bottleneck_dims]
    mlp = sum(a * b for a, b in zip(dims[:-1], dims[1:]))
    return 2 * (mlp + bottleneck_dims * n_prototypes)


@dataclass
class StepFlops:
    """FLOPs per image of one training step, and what they come from."""

    student: int  # backbone fwd + bwd over all crops
    teacher: int  # backbone fwd over the global crops
    heads: int  # student heads fwd + bwd, teacher heads fwd
    crops: str  # e.g. '2x224 + 8x98'
    masked_per_image: float  # iBOT rows per image in the heads

    @property
    def total(self) -> int:
        return self.student + self.teacher + self.heads


def _with_defaults(cfg: dict, registry, name: str) -> Dict[str, Any]:
    """``cfg`` over the registered class's constructor defaults."""
    out = {}
    cls = registry.get(name)
    if cls is not None:
        for key, p in inspect.signature(cls.__init__).parameters.items():
            if p.default is not inspect.Parameter.empty:
                out[key] = p.default
    out.update({k: v for k, v in cfg.items() if k != 'type'})
    return out


def _find(obj, type_name: str) -> Optional[dict]:
    """First dict with ``type == type_name`` anywhere in ``obj``."""
    if isinstance(obj, dict):
        if obj.get('type') == type_name:
            return obj
        items = obj.values()
    elif isinstance(obj, (list, tuple)):
        items = obj
    else:
        return None
    for item in items:
        found = _find(item, type_name)
        if found is not None:
            return found
    return None


def _pair(size) -> Tuple[int, int]:
    return (size, size) if isinstance(size, int) else tuple(size)


def _backbone_dims(backbone: dict) -> dict:
    """Width, depth, FFN of a ViT config (an arch name or dict)."""
    from mmssl.registry import MODELS

    arch = backbone.get('arch', 'small')
    if isinstance(arch, str):
        arch = MODELS.get(backbone['type']).arch_zoo[arch.lower()]
    c, hidden = arch['embed_dims'], arch.get('feedforward_channels')
    hidden = 4 * c if hidden is None else hidden
    swiglu = 'swiglu' in arch.get('ffn_type', 'origin')
    if swiglu:  # DINOv2's "swiglufused" hidden width
        hidden = (int(hidden * 2 / 3) + 7) // 8 * 8
    return dict(
        embed_dims=c,
        num_layers=arch['num_layers'],
        ffn_dims=hidden,
        swiglu=swiglu,
        num_extra_tokens=1 + backbone.get('num_register_tokens', 0),
        patch_dims=backbone.get('in_channels', 3)
        * backbone.get('patch_size', 16) ** 2,
        patch_size=backbone.get('patch_size', 16),
    )


def _masked_per_image(cfg, grid: int, num_global: int) -> float:
    """iBOT rows per image: the collate's buffer bound / batch size, or
    the mean count of a per-sample mask generator."""
    from mmssl.datasets.block_mask_collate import batch_mask_bound

    loader = cfg['train_dataloader']
    batch = loader.get('batch_size', 1)
    collate = loader.get('collate_fn') or {}
    if 'block_mask_collate' in str(collate.get('type', '')):
        mask = {
            k: v
            for k, v in collate.items()
            if k in ('mask_ratio', 'mask_prob')
        }
        g = collate.get('num_global_crops', num_global)
        bound = batch_mask_bound(g * batch, (grid, 1), **mask)
        return bound / batch
    gen = _find(loader, 'BlockwiseMaskGenerator')
    if gen is None:
        return 0.0
    lo, hi = gen.get('mask_ratio', (0.1, 0.5))
    return num_global * gen.get('mask_prob', 0.5) * grid * (lo + hi) / 2


def dino_step_flops(cfg) -> StepFlops:
    """Model FLOPs per image of a DINO / iBOT / DINOv2 config's step.

    Crops from the ``MultiCrop`` transform of the training pipeline
    (global crops through student and teacher, local crops through the
    student), the backbone's width and depth, the heads (CLS of every
    student crop, G teacher CLS, and the masked patches: the fixed buffer
    of ``block_mask_collate`` or the mean of ``BlockwiseMaskGenerator``)
    when the config has an iBOT term. The Gram teacher of DINOv3 is not
    counted.

    Args:
        cfg (Config | dict): A training config.

    Returns:
        StepFlops: The parts and the total per image.
    """
    from mmssl.registry import MODELS, TRANSFORMS

    model = cfg['model']
    crop = _find(cfg['train_dataloader'], 'MultiCrop')
    if crop is None:
        raise ValueError('dino_step_flops needs a MultiCrop pipeline.')
    crop = _with_defaults(crop, TRANSFORMS, 'MultiCrop')
    bb = _backbone_dims(model['backbone'])
    p = bb.pop('patch_size')

    def fwd(size):
        h, w = _pair(size)
        return vit_forward_flops((h // p) * (w // p), **bb)

    g, n_loc = crop['num_global_crops'], crop['num_local_crops']
    student = 3 * (g * fwd(crop['global_size']))
    student += 3 * n_loc * fwd(crop['local_size']) if n_loc else 0
    teacher = g * fwd(crop['global_size'])
    head = _with_defaults(dict(model['head']), MODELS, 'DINOHead')
    in_dims = head['in_channels']
    in_dims = bb['embed_dims'] if in_dims == 'auto' else in_dims
    row = head_forward_flops(
        in_dims,
        head['n_prototypes'],
        head['hidden_channels'],
        head['bottleneck_channels'],
        head['nlayers'],
    )
    ibot = 'ibot_loss' in model or 'ibot_patch' in model.get('terms', {})
    h, w = _pair(crop['global_size'])
    masked = _masked_per_image(cfg, (h // p) * (w // p), g) if ibot else 0.0
    patch_row = row
    if ibot and model.get('patch_head'):
        ph = _with_defaults(dict(model['patch_head']), MODELS, 'DINOHead')
        patch_row = head_forward_flops(
            in_dims,
            ph['n_prototypes'],
            ph['hidden_channels'],
            ph['bottleneck_channels'],
            ph['nlayers'],
        )
    heads = 3 * (g + n_loc) * row + g * row + 4 * masked * patch_row
    sizes = f'{g}x{_pair(crop["global_size"])[0]}'
    if n_loc:
        sizes += f' + {n_loc}x{_pair(crop["local_size"])[0]}'
    return StepFlops(
        student=student,
        teacher=teacher,
        heads=int(round(heads)),
        crops=sizes,
        masked_per_image=masked,
    )
