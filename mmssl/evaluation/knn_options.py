"""The metric and pooling options of the kNN evaluation (--k, --linear,
--pool)."""


def set_metrics(cfg, args) -> None:
    """``--k`` on the kNN metric(s); ``--linear`` adds the linear probe."""
    evaluator = cfg.get('test_evaluator') or []
    metrics = list(evaluator) if isinstance(evaluator, list) else [evaluator]
    if args.k:
        for metric in metrics:
            if metric.get('type') == 'KNNAccuracy':
                metric['k'] = args.k
    if args.linear:
        linear = 'LinearProbeAccuracy'
        metrics = [m for m in metrics if m.get('type') != linear]
        metrics.append(
            dict(
                type=linear,
                weight_decay=args.linear_wd,
                topk=(1, 5),
            )
        )
    if metrics:
        cfg.test_evaluator = metrics if len(metrics) > 1 else metrics[0]


def pool_patch_mean(model) -> None:
    """``model(x, mode='tensor')`` -> mean of the patch tokens (B, C)."""
    extract = getattr(model, 'extract_feat', None)
    if extract is None:
        raise SystemExit(
            f'error: --pool patch-mean needs a model with extract_feat; '
            f'{type(model).__name__} has none.'
        )

    def patch_mean(inputs, *args, **kwargs):
        out = extract(inputs, *args, **kwargs)
        while isinstance(out, (list, tuple)):
            out = out[-1]
        if out.dim() != 3:
            raise SystemExit(
                'error: --pool patch-mean needs ViT tokens (B, 1 + N, C), '
                f'got features of shape {tuple(out.shape)}; use --pool auto.'
            )
        return out[:, 1:].mean(dim=1)

    model.extract_feat = patch_mean
