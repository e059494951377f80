"""Each rule of the MMSelfSup 1.x migration, on hand-written MMSelfSup-style
dicts (this project's own fixtures, written in MMSelfSup 1.x's form)."""

import pytest

from mmssl.config.migrate_mmselfsup import migrate_cfg_dict


def _migrate(**cfg):
    cfg.setdefault('default_scope', 'mmselfsup')
    return migrate_cfg_dict(cfg, source='fixture.py')


def _pipeline(*steps):
    out, report = _migrate(
        train_dataloader=dict(dataset=dict(pipeline=list(steps)))
    )
    return out['train_dataloader']['dataset']['pipeline'], report


def _model(**model):
    out, report = _migrate(model=model)
    return out['model'], report


def test_scope_prefixes_runner_and_randomness():
    out, report = _migrate(
        model=dict(
            type='mmselfsup.SimCLR',
            head=dict(
                type='ContrastiveHead',
                loss=dict(type='mmcls.CrossEntropyLoss'),
            ),
        ),
        dataset_type='mmcls.ImageNet',
        randomness=None,
    )
    assert out['default_scope'] == 'mmssl'
    assert out['runner_type'] == 'SSLRunner'
    assert out['model']['type'] == 'SimCLR'
    assert out['model']['head']['loss']['type'] == 'CrossEntropyLoss'
    assert out['dataset_type'] == 'ImageNet'
    assert out['randomness'] == dict(seed=None)
    assert ('default_scope', "'mmselfsup' -> 'mmssl'") in report.changed


def test_pack_inputs():
    (pack,), _ = _pipeline(
        dict(
            type='PackSelfSupInputs',
            key='img',
            algorithm_keys=['mask'],
            pseudo_label_keys=['rot_label'],
            meta_keys=['img_path'],
        )
    )
    # 'mask' is packed by PackInputs itself (as a tensor)
    assert pack == dict(
        type='PackInputs', algorithm_keys=['rot_label'], meta_keys=['img_path']
    )


def test_blur_solarize_crops_and_jitter():
    steps, _ = _pipeline(
        dict(
            type='RandomGaussianBlur', sigma_min=0.2, sigma_max=1.5, prob=0.3
        ),
        dict(type='RandomSolarize', threshold=100, prob=0.2),
        dict(
            type='RandomResizedCrop',
            size=96,
            scale=(0.3, 0.9),
            ratio=(0.5, 2.0),
            backend='pillow',
        ),
        dict(type='RandomCrop', size=20, padding=2),
        dict(type='ColorJitter', brightness=0.4, hue=0.1),
    )
    blur, solarize, rrc, crop, jitter = steps
    assert blur == dict(
        type='GaussianBlur',
        magnitude_range=(0.2, 1.5),
        magnitude_std='inf',
        prob=0.3,
    )
    assert solarize == dict(type='Solarize', thr=100, prob=0.2)
    assert rrc == dict(
        type='RandomResizedCrop',
        scale=96,
        crop_ratio_range=(0.3, 0.9),
        aspect_ratio_range=(0.5, 2.0),
        backend='pillow',
    )
    assert crop == dict(type='RandomCrop', crop_size=20, padding=2)
    assert jitter == dict(type='HueSafeColorJitter', brightness=0.4, hue=0.1)


def test_mmpretrain_form_crop_is_left_alone():
    (rrc,), report = _pipeline(
        dict(type='RandomResizedCrop', scale=32, crop_ratio_range=(0.5, 1))
    )
    assert rrc == dict(
        type='RandomResizedCrop', scale=32, crop_ratio_range=(0.5, 1)
    )
    assert not [w for w, _ in report.changed if 'pipeline' in w]


def test_rotation_and_relative_loc_transforms():
    steps, _ = _pipeline(
        dict(type='RandomRotation', degrees=2),
        dict(type='RotationWithLabels'),
        dict(type='RandomPatchWithLabels'),
    )
    assert steps == [
        dict(type='ToPIL', to_rgb=False),
        dict(type='torchvision/RandomRotation', degrees=2),
        dict(type='ToNumpy', to_bgr=False),
        dict(type='RelativeLocPatches', patch_size=64),
    ]
    (to_numpy,), _ = _pipeline(dict(type='mmcls.ToNumpy', to_rgb=True))
    assert to_numpy == dict(type='ToNumpy', to_bgr=True)


@pytest.mark.parametrize(
    'given, expected, unmapped',
    [
        ([4], None, False),  # the last stage: mmpretrain's default (3,)
        ([2, 3, 4], [1, 2, 3], False),
        ([0, 4], None, True),  # the stem has no mmpretrain output
    ],
)
def test_resnet_out_indices(given, expected, unmapped):
    model, report = _model(
        type='SimCLR',
        backbone=dict(type='ResNet', depth=50, out_indices=given),
    )
    backbone = model['backbone']
    assert backbone.get('out_indices') == expected
    assert backbone['zero_init_residual'] is False  # MMSelfSup's default
    assert bool(report.unmapped) == unmapped


@pytest.mark.parametrize(
    'algo, arg, old, new',
    [
        ('BYOL', 'base_momentum', 0.99, 0.01),
        ('MoCoV3', 'base_momentum', 0.996, 0.004),
        ('MoCo', 'momentum', 0.999, 0.001),
        ('DenseCL', 'momentum', 0.999, 0.001),
        ('CAE', 'base_momentum', 0.0, 0.0),  # CAE kept the old meaning
    ],
)
def test_momentum_convention(algo, arg, old, new):
    model, _ = _model(type=algo, **{arg: old})
    assert model[arg] == pytest.approx(new)


def test_data_preprocessors():
    model, _ = _model(
        type='MAE', data_preprocessor=dict(mean=[1, 2, 3], bgr_to_rgb=True)
    )
    assert model['data_preprocessor'] == dict(
        type='SelfSupDataPreprocessor', mean=[1, 2, 3], to_rgb=True
    )
    model, _ = _model(
        type='CAE',
        data_preprocessor=dict(
            type='mmselfsup.CAEDataPreprocessor', bgr_to_rgb=True
        ),
    )
    pre = model['data_preprocessor']
    assert pre['type'] == 'TwoNormDataPreprocessor'
    # DALL-E's input 0.8 * x / 255 + 0.1 == (x - second_mean) / second_std
    x = 200.0
    assert (x - pre['second_mean'][0]) / pre['second_std'][0] == (
        pytest.approx(0.8 * x / 255 + 0.1)
    )
    for kind in (
        'RotationPredDataPreprocessor',
        'RelativeLocDataPreprocessor',
    ):
        model, _ = _model(
            type='RotationPred', data_preprocessor=dict(type=kind)
        )
        assert model['data_preprocessor']['type'] == 'SelfSupDataPreprocessor'


def test_renamed_modules_and_losses():
    model, _ = _model(
        type='SimMIM',
        backbone=dict(type='MixMIMTransformerPretrain', arch='B'),
        neck=dict(type='SimMIMNeck', in_channels=8, encoder_stride=4),
        head=dict(
            type='MILANPretrainHead',
            loss=dict(type='SimMIMReconstructionLoss', encoder_in_channels=3),
        ),
        target_generator=dict(type='CLIPGenerator', tokenizer_path='x.pth'),
    )
    assert model['backbone']['type'] == 'MixMIMPretrainTransformer'
    assert model['neck']['type'] == 'SimMIMLinearDecoder'
    assert model['head'] == dict(
        type='MIMHead',
        loss=dict(type='PixelReconstructionLoss', criterion='L1', channel=3),
    )
    assert model['target_generator'] == dict(
        type='PretrainedCLIPTarget', tokenizer_path='x.pth'
    )
    model, _ = _model(
        type='MAE',
        head=dict(
            type='MAEPretrainHead', loss=dict(type='MAEReconstructionLoss')
        ),
    )
    assert model['head']['loss'] == dict(
        type='PixelReconstructionLoss', criterion='L2'
    )


def test_vit_arguments():
    model, _ = _model(
        type='CAE',
        backbone=dict(type='CAEViT', init_values=0.1, qkv_bias=False),
        neck=dict(type='CAENeck', patch_size=16, init_values=0.1),
        target_generator=dict(
            type='VQKD',
            encoder_config=dict(avg_token=False, output_cls_token=False),
        ),
    )
    assert model['backbone'] == dict(
        type='CAEPretrainViT', layer_scale_init_value=0.1, bias='qv_bias'
    )
    assert model['neck'] == dict(type='CAENeck', layer_scale_init_value=0.1)
    assert model['target_generator']['encoder_config'] == dict(
        out_type='featmap'
    )
    model, _ = _model(type='BEiT', backbone=dict(type='BEiTViT'))
    assert model['backbone'] == dict(type='BEiTPretrainViT', out_type='raw')


def test_necks_and_cls_head():
    model, _ = _model(
        type='MoCoV3',
        neck=dict(type='NonLinearNeck', in_channels=4, vit_backbone=True),
        head=dict(
            type='ClsHead',
            in_channels=8,
            num_classes=4,
            with_avg_pool=True,
            loss=dict(type='mmcls.CrossEntropyLoss'),
            init_cfg=[dict(type='Normal', std=0.005, layer='Linear')],
        ),
    )
    assert model['neck'] == dict(type='NonLinearNeck', in_channels=4)
    assert model['head'] == dict(
        type='PretextClsHead',
        in_channels=8,
        num_classes=4,
        with_avg_pool=True,
        init_std=0.005,
    )
    model, _ = _model(
        type='MaskFeat',
        neck=dict(
            type='LinearNeck',
            in_channels=4,
            out_channels=2,
            with_avg_pool=False,
        ),
    )
    assert model['neck'] == dict(
        type='LinearNeck',
        in_channels=4,
        out_channels=2,
        gap_dim=0,
        norm_cfg=None,
    )


def test_memory_banks():
    model, _ = _model(
        type='NPID',
        memory_bank=dict(
            type='SimpleMemory', length=10, feat_dim=8, momentum=0.3
        ),
    )
    assert (
        model['num_samples'],
        model['feat_dim'],
        model['bank_momentum'],
    ) == (10, 8, 0.3)
    assert 'memory_bank' not in model
    model, _ = _model(
        type='ODC',
        neck=dict(type='ODCNeck', in_channels=4),
        memory_bank=dict(
            type='ODCMemory',
            length=10,
            feat_dim=8,
            momentum=0.3,
            num_classes=5,
            min_cluster=2,
        ),
    )
    assert (
        model['num_samples'],
        model['num_classes'],
        model['feat_dim'],
        model['memory_momentum'],
        model['min_cluster'],
    ) == (10, 5, 8, 0.3, 2)
    assert model['neck'] == dict(
        type='NonLinearNeck', in_channels=4, num_layers=2
    )


def _clustering_cfg(algo):
    extract = [
        dict(type='LoadImageFromFile'),
        dict(type='PackSelfSupInputs', meta_keys=['img_path']),
    ]
    return dict(
        default_scope='mmselfsup',
        model=dict(type=algo, head=dict(type='ClsHead', num_classes=7)),
        train_dataloader=dict(
            sampler=dict(
                type='DeepClusterSampler', shuffle=True, replace=True
            ),
            dataset=dict(
                type='DeepClusterImageNet',
                pipeline=[
                    dict(
                        type='PackSelfSupInputs',
                        meta_keys=['img_path'],
                        pseudo_label_keys=['clustering_label'],
                    )
                ],
            ),
        ),
        custom_hooks=[
            dict(
                type='DeepClusterHook',
                extract_dataloader=dict(
                    batch_size=3, dataset=dict(pipeline=extract)
                ),
                clustering=dict(type='Kmeans', k=7, pca_dim=-1),
                interval=2,
            ),
            dict(
                type='ODCHook',
                centroids_update_interval=5,
                evaluate_interval=50,
                reweight_pow=0.4,
            ),
        ][: 2 if algo == 'ODC' else 1],
    )


def test_deepcluster_and_odc_hooks():
    out, _ = migrate_cfg_dict(_clustering_cfg('DeepCluster'))
    loader = out['train_dataloader']
    assert loader['sampler'] == dict(type='ClusterUniformSampler')
    assert loader['dataset']['type'] == 'ImageNet'
    (pack,) = loader['dataset']['pipeline']
    assert pack == dict(
        type='PackInputs', meta_keys=['img_path', 'sample_idx']
    )
    (hook,) = out['custom_hooks']
    assert hook['type'] == 'DeepClusterHook'
    assert (
        hook['num_classes'],
        hook['pca_dim'],
        hook['interval'],
        hook['batch_size'],
    ) == (7, None, 2, 3)
    assert hook['extract_pipeline'][-1]['type'] == 'PackInputs'
    assert out['model']['num_classes'] == 7
    out, _ = migrate_cfg_dict(_clustering_cfg('ODC'))
    sampler = out['train_dataloader']['sampler']
    assert sampler == dict(type='DefaultSampler', shuffle=True)
    (hook,) = out['custom_hooks']  # the initial clustering is ODCHook's
    assert hook['type'] == 'ODCHook'
    assert hook['centroids_update_interval'] == 5
    assert 'evaluate_interval' not in hook
    assert out['model']['reweight_pow'] == 0.4


def test_helper_variables_optimizer_visualizer():
    opt = dict(type='SGD', lr=0.1)
    out, report = _migrate(
        optimizer=opt,
        temperature=0.2,
        view_pipeline1=[dict(type='X')],
        visualizer=dict(type='SelfSupVisualizer', name='visualizer'),
        custom_hooks=[dict(type='SelfSupVisualizationHook')],
    )
    assert out['optim_wrapper'] == dict(type='OptimWrapper', optimizer=opt)
    for key in ('optimizer', 'temperature', 'view_pipeline1'):
        assert key not in out
    assert out['visualizer'] == dict(type='UniversalVisualizer')
    assert out['custom_hooks'] == []
    assert any('SelfSupVisualizationHook' in m for _, m in report.unmapped)
    # a stale top-level optimizer: the wrapper's (what MMSelfSup ran) wins
    out, report = _migrate(
        optimizer=opt, optim_wrapper=dict(optimizer=dict(type='SGD', lr=0.5))
    )
    assert out['optim_wrapper']['optimizer']['lr'] == 0.5
    assert any('differs' in m for _, m in report.changed)


def test_pixmim_target_generator():
    model, _ = _model(
        type='PixMIM',
        target_generator=dict(
            type='LowFreqTargetGenerator', radius=30, img_size=224
        ),
    )
    assert model == dict(type='PixMIM', low_freq_radius=30)
