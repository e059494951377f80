"""Algorithm rules: what changed inside one algorithm's model dict, and the
clustering algorithms' hooks, memories and samplers.

Model rules take ``(model, report)`` and return the new model dict;
config rules take ``(cfg, report)`` and change the flat config dict.
"""

from .report import MigrationReport

#: ImageNet-1k's training set, MMSelfSup's memory-bank length
IN1K_SAMPLES = 1281167

#: Algorithms whose momentum moved from ``m * old + (1 - m) * new`` (MMSelfSup
#: 1.x) to mmpretrain's CosineEMA ``(1 - m) * old + m * new``: the argument.
MOMENTUM_ARG = {
    'BYOL': 'base_momentum',
    'MoCoV3': 'base_momentum',
    'MoCo': 'momentum',
    'DenseCL': 'momentum',
}


def flip_momentum(model: dict, report: MigrationReport) -> dict:
    arg = MOMENTUM_ARG.get(model.get('type'))
    if arg is None or arg not in model:
        return model
    old = model[arg]
    new = round(1.0 - old, 10)
    report.change(
        f'model.{arg}',
        f'{old} -> {new} (mmpretrain weighs the new parameters by m: '
        '(1 - m) * target + m * online)',
    )
    return dict(model, **{arg: new})


def npid(model: dict, report: MigrationReport) -> dict:
    """NPID(memory_bank=SimpleMemory(length, feat_dim, momentum)) ->
    NPID(num_samples, feat_dim, bank_momentum)."""
    out = {k: v for k, v in model.items() if k not in ('memory_bank',)}
    bank = model.get('memory_bank', {})
    out['num_samples'] = bank.get('length', IN1K_SAMPLES)
    out['feat_dim'] = bank.get('feat_dim', 128)
    out['bank_momentum'] = bank.get('momentum', 0.5)
    report.change(
        'model.memory_bank',
        'SimpleMemory(length, feat_dim, momentum) -> NPID(num_samples, '
        'feat_dim, bank_momentum)',
    )
    if out.pop('ensure_neg', False):
        report.cannot(
            'model.ensure_neg',
            "mmssl's NPID draws negatives without excluding the positive "
            '(ensure_neg dropped)',
        )
    return out


def odc(model: dict, report: MigrationReport) -> dict:
    """ODC(memory_bank=ODCMemory(...), neck=ODCNeck) -> ODC(num_samples,
    num_classes, feat_dim, memory_momentum, min_cluster) + NonLinearNeck."""
    out = {k: v for k, v in model.items() if k != 'memory_bank'}
    bank = model.get('memory_bank', {})
    out['num_samples'] = bank.get('length', IN1K_SAMPLES)
    out['num_classes'] = bank.get('num_classes', 10000)
    out['feat_dim'] = bank.get('feat_dim', 256)
    out['memory_momentum'] = bank.get('momentum', 0.5)
    out['min_cluster'] = bank.get('min_cluster', 20)
    report.change(
        'model.memory_bank',
        'ODCMemory -> ODC(num_samples, num_classes, feat_dim, '
        'memory_momentum, min_cluster)',
    )
    neck = dict(model.get('neck', {}))
    if neck.get('type') == 'ODCNeck':
        neck['type'] = 'NonLinearNeck'
        neck['num_layers'] = 2
        out['neck'] = neck
        report.change('model.neck', 'ODCNeck -> NonLinearNeck(num_layers=2)')
    return out


def deepcluster(model: dict, report: MigrationReport) -> dict:
    out = dict(model)
    out['num_samples'] = IN1K_SAMPLES
    out['num_classes'] = model.get('head', {}).get('num_classes', 10000)
    report.change(
        'model.num_samples',
        f'{IN1K_SAMPLES} (ImageNet-1k train; set it to your dataset size)',
    )
    return out


def pixmim(model: dict, report: MigrationReport) -> dict:
    """LowFreqTargetGenerator(radius, img_size) -> PixMIM's own
    ``low_freq_radius``."""
    out = {k: v for k, v in model.items() if k != 'target_generator'}
    target = model.get('target_generator') or {}
    if 'radius' in target:
        out['low_freq_radius'] = target['radius']
        report.change(
            'model.target_generator',
            'LowFreqTargetGenerator(radius) -> PixMIM(low_freq_radius)',
        )
    return out


MODEL_RULES = {
    'NPID': npid,
    'ODC': odc,
    'DeepCluster': deepcluster,
    'PixMIM': pixmim,
}


def _meta_keys_with_index(pipeline: list, report: MigrationReport) -> None:
    """The clustering/memory algorithms read each sample's index."""
    for step in pipeline or []:
        if step.get('type') == 'PackInputs' and 'meta_keys' in step:
            keys = list(step['meta_keys'])
            if 'sample_idx' not in keys:
                step['meta_keys'] = keys + ['sample_idx']
                report.change(
                    'train_pipeline PackInputs.meta_keys',
                    "+ 'sample_idx' (the memory bank is indexed by it)",
                )
            step.pop('algorithm_keys', None)


def _deepcluster_hook(hook: dict, model: dict, where, report) -> dict:
    """DeepClusterHook(extract_dataloader, clustering=Kmeans(k, pca_dim))
    -> DeepClusterHook(extract_pipeline, num_classes, pca_dim)."""
    loader = hook.get('extract_dataloader', {})
    clustering = hook.get('clustering', {})
    pca = clustering.get('pca_dim', 256)
    report.change(
        where,
        'DeepClusterHook(extract_dataloader, clustering=Kmeans) -> '
        'DeepClusterHook(extract_pipeline, num_classes, pca_dim)',
    )
    if hook.get('reweight'):
        report.cannot(where, 'reweight=True: mmssl samples clusters uniformly')
    return dict(
        type='DeepClusterHook',
        extract_pipeline=loader.get('dataset', {}).get('pipeline'),
        num_classes=clustering.get('k', model.get('num_classes')),
        pca_dim=None if pca in (-1, None) else pca,
        interval=hook.get('interval', 1),
        batch_size=loader.get('batch_size', 128),
        num_workers=loader.get('num_workers', 0),
    )


def _odc_hook(hook: dict, model: dict, extract, where, report) -> dict:
    """ODCHook -> mmssl's ODCHook(extract_pipeline, intervals); its
    ``reweight_pow`` moves to the model."""
    keep = ('centroids_update_interval', 'deal_with_small_clusters_interval')
    if 'reweight_pow' in hook:
        model['reweight_pow'] = hook['reweight_pow']
    known = keep + ('type', 'reweight', 'reweight_pow')
    gone = [k for k in hook if k not in known]
    report.change(
        where,
        'ODCHook -> ODCHook(extract_pipeline, ...); reweight_pow '
        f'-> model.reweight_pow; dropped {gone}',
    )
    out = dict(type='ODCHook', extract_pipeline=extract)
    out.update({k: hook[k] for k in keep if k in hook})
    return out


def _cluster_sampler(loader: dict, kind: str, report) -> None:
    """DeepClusterSampler(shuffle, replace): DeepCluster's draws clusters
    uniformly (mmssl's ClusterUniformSampler, always shuffled); ODC
    reweights its loss instead, over a plain shuffled sampler."""
    sampler = loader.get('sampler')
    if not isinstance(sampler, dict):
        return
    if sampler.get('type') != 'ClusterUniformSampler':
        return
    where = 'train_dataloader.sampler'
    if kind == 'ODC':
        loader['sampler'] = dict(type='DefaultSampler', shuffle=True)
        report.change(
            where,
            "DeepClusterSampler -> DefaultSampler(shuffle=True) (mmssl's "
            'ODC reweights the loss by cluster size: model.reweight_pow)',
        )
        return
    gone = [k for k in sampler if k not in ('type', 'seed')]
    loader['sampler'] = {k: v for k, v in sampler.items() if k not in gone}
    if gone:
        report.change(
            where,
            f'ClusterUniformSampler: dropped {gone} (it always shuffles, '
            'drawing clusters uniformly)',
        )


def clustering_hooks(cfg: dict, report: MigrationReport) -> None:
    """The clustering and memory-bank algorithms' hooks and packed keys."""
    model = cfg.get('model', {})
    kind = model.get('type')
    if kind not in ('DeepCluster', 'ODC', 'NPID'):
        return
    loader = cfg.get('train_dataloader', {})
    _meta_keys_with_index(loader.get('dataset', {}).get('pipeline'), report)
    _cluster_sampler(loader, kind, report)
    hooks, new, extract = cfg.get('custom_hooks', []), [], None
    for i, hook in enumerate(hooks):
        where = f'custom_hooks[{i}]'
        if hook.get('type') == 'DeepClusterHook' and kind == 'ODC':
            loader = hook.get('extract_dataloader', {})
            extract = loader.get('dataset', {}).get('pipeline')
            report.change(
                where,
                'DeepClusterHook (initial clustering) dropped: '
                "mmssl's ODCHook clusters at the start itself",
            )
        elif hook.get('type') == 'DeepClusterHook':
            new.append(_deepcluster_hook(hook, model, where, report))
        elif hook.get('type') == 'ODCHook':
            new.append(_odc_hook(hook, model, extract, where, report))
        else:
            new.append(hook)
    if hooks:
        cfg['custom_hooks'] = new
