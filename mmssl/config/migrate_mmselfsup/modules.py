"""Module rules: MMSelfSup 1.x backbones, necks, heads, losses, data
preprocessors and the visualizer -> their mmpretrain/mmssl names.

Each rule takes the dict (``type`` without a scope prefix), where it sits
and the report, and returns the new dict.
"""

from .report import MigrationReport

#: Same arguments, new name.
RENAMED = {
    'SimMIMNeck': 'SimMIMLinearDecoder',
    'MixMIMTransformerPretrain': 'MixMIMPretrainTransformer',
    'MILANPretrainHead': 'MIMHead',
    'MaskFeatPretrainHead': 'MIMHead',
    'AvgPool2dNeck': 'GlobalAveragePooling',
    'SelfSupVisualizer': 'UniversalVisualizer',
    'DeepClusterImageNet': 'ImageNet',
    'DeepClusterSampler': 'ClusterUniformSampler',
    'BEiTLoss': 'CrossEntropyLoss',
    'DALL-E': 'PretrainedDALLETarget',
    'CLIPGenerator': 'PretrainedCLIPTarget',
    'HOGGenerator': 'FloatHOGGenerator',
}

#: Why a name reads differently in mmssl (for the report), if not obvious.
WHY = {
    'DALL-E': 'checks the tokenizer file before loading it',
    'VQKD': 'checks the tokenizer file before loading it',
    'CLIPGenerator': 'checks the tokenizer file before loading it',
    'HOGGenerator': 'float32 HOG under CPU autocast',
}


def resnet(d: dict, where: str, report: MigrationReport) -> dict:
    """ResNet/ResNetSobel: ``out_indices`` counted the stem as 0 in
    MMSelfSup (4 = last stage), mmpretrain counts stages from 0 (3 = last
    stage); MMSelfSup's default ``zero_init_residual`` was False."""
    out = dict(d)
    if out['type'] == 'ResNetSobel':
        report.cannot(
            where,
            'ResNetSobel (a Sobel filter before the stem) has no mmssl '
            'counterpart: migrated as a plain ResNet on RGB',
        )
        out['type'] = 'ResNet'
    indices = out.get('out_indices', (4,))
    indices = [indices] if isinstance(indices, int) else list(indices)
    if 0 in indices:
        report.cannot(
            where,
            'out_indices 0 (the stem output) has no mmpretrain '
            'counterpart: dropped',
        )
    new = [i - 1 for i in indices if i != 0]
    if new != [3]:
        out['out_indices'] = new
    else:
        out.pop('out_indices', None)
    if 'out_indices' in d:
        report.change(
            where,
            f'ResNet out_indices {list(indices)} -> {new} (mmpretrain '
            'counts stages from 0, without the stem)',
        )
    if 'zero_init_residual' not in out:
        out['zero_init_residual'] = False
        report.change(
            where,
            'ResNet zero_init_residual=False (MMSelfSup default; '
            "mmpretrain's is True)",
        )
    if out.get('in_channels') == 3:
        out.pop('in_channels')
    return out


def data_preprocessor(d: dict, where: str, report: MigrationReport) -> dict:
    """bgr_to_rgb -> to_rgb; MMSelfSup's special preprocessors -> the
    plain or two-normalisation ones."""
    out = {('to_rgb' if k == 'bgr_to_rgb' else k): v for k, v in d.items()}
    kind = out['type']
    if kind == 'CAEDataPreprocessor':
        # the DALL-E target input: 0.8 * x / 255 + 0.1 = (x - m) / s
        out['type'] = 'TwoNormDataPreprocessor'
        out['second_mean'] = [-31.875] * 3
        out['second_std'] = [318.75] * 3
        report.change(
            where,
            'CAEDataPreprocessor -> TwoNormDataPreprocessor(second_mean='
            '-31.875, second_std=318.75: the DALL-E input 0.8x/255+0.1)',
        )
    elif kind in (
        'RotationPredDataPreprocessor',
        'RelativeLocDataPreprocessor',
    ):
        out['type'] = 'SelfSupDataPreprocessor'
        report.change(
            where,
            f'{kind} -> SelfSupDataPreprocessor (mmssl builds the '
            'rotations/patches in the algorithm)',
        )
    if 'bgr_to_rgb' in d:
        report.change(where, 'data_preprocessor bgr_to_rgb -> to_rgb')
    return out


def cls_head(d: dict, where: str, report: MigrationReport) -> dict:
    """ClsHead(in_channels, num_classes, with_avg_pool, loss=CE) ->
    PretextClsHead (a linear classifier with its own cross-entropy)."""
    out = dict(
        type='PretextClsHead',
        in_channels=d.get('in_channels', 2048),
        num_classes=d.get('num_classes', 1000),
    )
    if d.get('with_avg_pool'):
        out['with_avg_pool'] = True
    for init in _as_list(d.get('init_cfg')):
        if init.get('type') == 'Normal' and 'std' in init:
            out['init_std'] = init['std']
    loss = d.get('loss', {})
    if loss.get('loss_weight', 1.0) != 1.0:
        out['loss_weight'] = loss['loss_weight']
    report.change(where, 'ClsHead -> PretextClsHead')
    return out


def _as_list(value) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def linear_neck(d: dict, where: str, report: MigrationReport) -> dict:
    """LinearNeck(with_avg_pool) -> LinearNeck(gap_dim, norm_cfg=None)."""
    if 'with_avg_pool' not in d and 'vit_backbone' not in d:
        return d
    out = {k: v for k, v in d.items() if k not in ('with_avg_pool',)}
    out['gap_dim'] = 2 if d.get('with_avg_pool') else 0
    out.setdefault('norm_cfg', None)
    report.change(
        where,
        'LinearNeck(with_avg_pool) -> LinearNeck(gap_dim, norm_cfg=None)',
    )
    return out


def drop_args(*names: str, why: str):
    """A rule that drops arguments mmpretrain's class does not take."""

    def rule(d: dict, where: str, report: MigrationReport) -> dict:
        gone = [n for n in names if n in d]
        if gone:
            report.change(where, f'{d["type"]}: dropped {gone} ({why})')
        return {k: v for k, v in d.items() if k not in names}

    return rule


def beit_vit(d: dict, where: str, report: MigrationReport) -> dict:
    report.change(where, "BEiTViT -> BEiTPretrainViT(out_type='raw')")
    return dict(d, type='BEiTPretrainViT', out_type='raw')


def cae_vit(d: dict, where: str, report: MigrationReport) -> dict:
    """CAEViT(init_values, qkv_bias=False) -> CAEPretrainViT(
    layer_scale_init_value, bias='qv_bias')."""
    out = {k: v for k, v in d.items() if k not in ('init_values', 'qkv_bias')}
    out['type'] = 'CAEPretrainViT'
    if 'init_values' in d:
        out['layer_scale_init_value'] = d['init_values']
    if not d.get('qkv_bias', True):
        out['bias'] = 'qv_bias'
    report.change(where, 'CAEViT -> CAEPretrainViT (init_values, qkv_bias)')
    return out


def cae_neck(d: dict, where: str, report: MigrationReport) -> dict:
    out = {
        k: v for k, v in d.items() if k not in ('init_values', 'patch_size')
    }
    if 'init_values' in d:
        out['layer_scale_init_value'] = d['init_values']
    report.change(where, 'CAENeck: init_values -> layer_scale_init_value')
    return out


def reconstruction_loss(d: dict, where: str, report: MigrationReport) -> dict:
    """MAEReconstructionLoss -> PixelReconstructionLoss(L2);
    SimMIMReconstructionLoss -> PixelReconstructionLoss(L1, channel)."""
    if d['type'] == 'MAEReconstructionLoss':
        out = dict(type='PixelReconstructionLoss', criterion='L2')
    else:
        out = dict(
            type='PixelReconstructionLoss',
            criterion='L1',
            channel=d.get('encoder_in_channels', 3),
        )
    report.change(where, f'{d["type"]} -> PixelReconstructionLoss')
    return out


def simmim_head(d: dict, where: str, report: MigrationReport) -> dict:
    out = {k: v for k, v in d.items() if k != 'encoder_in_channels'}
    return out


def milan_head(d: dict, where: str, report: MigrationReport) -> dict:
    report.change(where, 'MILANPretrainHead -> MIMHead')
    return dict(type='MIMHead', loss=d['loss'])


def vqkd(d: dict, where: str, report: MigrationReport) -> dict:
    """VQKD -> PretrainedVQKDTarget; its ViT encoder's ``avg_token`` and
    ``output_cls_token`` -> ``out_type='featmap'``."""
    out = dict(d, type='PretrainedVQKDTarget')
    enc = dict(out.get('encoder_config') or {})
    gone = [k for k in ('avg_token', 'output_cls_token') if k in enc]
    if gone:
        enc = {k: v for k, v in enc.items() if k not in gone}
        enc['out_type'] = 'featmap'
        out['encoder_config'] = enc
    report.change(
        where,
        f'VQKD -> PretrainedVQKDTarget ({WHY["VQKD"]}); encoder_config '
        f"{gone} -> out_type='featmap'",
    )
    return out


MODULE_RULES = {
    'VQKD': vqkd,
    'ResNet': resnet,
    'ResNetSobel': resnet,
    'SelfSupDataPreprocessor': data_preprocessor,
    'TwoNormDataPreprocessor': data_preprocessor,
    'CAEDataPreprocessor': data_preprocessor,
    'RotationPredDataPreprocessor': data_preprocessor,
    'RelativeLocDataPreprocessor': data_preprocessor,
    'ClsHead': cls_head,
    'LinearNeck': linear_neck,
    'NonLinearNeck': drop_args(
        'vit_backbone', why="mmpretrain's ViTs return the class token"
    ),
    'RelativeLocNeck': drop_args(
        'with_avg_pool', why="mmssl's RelativeLocNeck pools itself"
    ),
    'BEiTViT': beit_vit,
    'CAEViT': cae_vit,
    'CAENeck': cae_neck,
    'MAEReconstructionLoss': reconstruction_loss,
    'SimMIMReconstructionLoss': reconstruction_loss,
    'SimMIMHead': simmim_head,
    'MILANPretrainHead': milan_head,
}
