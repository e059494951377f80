"""t-SNE pictures of frozen features.

t-SNE: van der Maaten and Hinton, "Visualizing Data using t-SNE" (JMLR
2008), computed with scikit-learn; drawn with matplotlib (Agg backend).
"""

import inspect

import numpy as np
import torch

from mmssl.engine.runner.feature_extraction import pool_features


def select_features(out, feature: str = 'pooled') -> torch.Tensor:
    """One vector per image from a backbone output, (B, C).

    Args:
        out: What the backbone (or ``model(x, mode='tensor')``) returns:
            a tensor or a tuple of per-stage outputs.
        feature (str): ``'pooled'`` (CLS token of token outputs, global
            average of feature maps; see
            :func:`~mmssl.engine.runner.feature_extraction.pool_features`),
            ``'cls'`` (the CLS token; fails for feature maps) or
            ``'stage:K'`` (output ``K`` of the tuple, pooled; negative K
            counts from the end).

    Returns:
        torch.Tensor: Features, (B, C).
    """
    if isinstance(out, dict):
        from mmssl.evaluation.hooks.feature_eval_hook import _as_tensor

        out = _as_tensor(out)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    if feature == 'pooled':
        return pool_features(outs)
    if feature == 'cls':
        last = outs[-1]
        if isinstance(last, (list, tuple)):
            last = last[-1]
        if last.dim() == 3:
            return last[:, 0]  # (B, N, C) -> (B, C)
        if last.dim() == 2:
            return last
        raise ValueError(
            f'--feature cls needs a token or CLS output, got shape '
            f'{tuple(last.shape)} (a feature map); use --feature pooled.'
        )
    if feature.startswith('stage:'):
        try:
            k = int(feature.split(':', 1)[1])
        except ValueError:
            raise ValueError(
                f'Bad --feature {feature!r}; write stage:K '
                'with an integer K, e.g. stage:2.'
            ) from None
        if not -len(outs) <= k < len(outs):
            raise ValueError(
                f'--feature {feature}: the backbone returns {len(outs)} '
                'output(s). Ask for more stages with --cfg-options '
                'model.backbone.out_indices="[0,1,2,3]".'
            )
        return pool_features([outs[k]])
    raise ValueError(
        f'Unknown --feature {feature!r}; choose cls, pooled or stage:K.'
    )


def run_tsne(
    feats: np.ndarray,
    perplexity: float = 30.0,
    n_iter: int = 1000,
    seed: int = 0,
    **tsne_kwargs,
) -> np.ndarray:
    """t-SNE embedding of ``feats`` (N, C) -> (N, n_components).

    The perplexity is lowered to ``(N - 1) / 3`` for small N, as t-SNE
    needs more samples than about three times the perplexity.
    ``tsne_kwargs`` (``n_components``, ``early_exaggeration``,
    ``learning_rate``, ``n_iter_without_progress``, ``init``) go to
    scikit-learn's ``TSNE``; defaults: 2 components, ``init='pca'``,
    ``learning_rate='auto'``.
    """
    from sklearn.manifold import TSNE

    n = feats.shape[0]
    if n < 3:
        raise ValueError(f't-SNE needs at least 3 samples, got {n}.')
    perplexity = min(perplexity, max((n - 1) / 3.0, 1.0))
    kwargs = dict(
        n_components=2,
        perplexity=perplexity,
        init='pca',
        random_state=seed,
        learning_rate='auto',
    )
    params = inspect.signature(TSNE).parameters
    kwargs['max_iter' if 'max_iter' in params else 'n_iter'] = max(n_iter, 250)
    kwargs.update({k: v for k, v in tsne_kwargs.items() if v is not None})
    return TSNE(**kwargs).fit_transform(feats.astype(np.float32))


def first_classes(labels: np.ndarray, max_num_class: int) -> np.ndarray:
    """Mask of the samples whose label is below ``max_num_class``
    (MMSelfSup's ``--max-num-class``: the first classes only); unlabelled
    samples (-1) are kept."""
    if max_num_class < 1:
        raise ValueError(f'--max-num-class must be >= 1, got {max_num_class}.')
    return labels < max_num_class


def plot_embedding(
    emb: np.ndarray,
    groups: np.ndarray,
    names: list,
    out_file: str,
    title: str = '',
    size: float = 5.0,
    dpi: int = 100,
) -> None:
    """Scatter plot of a 2-D embedding, one colour per group, as PNG.

    Args:
        emb (np.ndarray): Points, (N, 2).
        groups (np.ndarray): Integer group of each point, (N, ).
        names (list[str]): Legend name of each group id.
        out_file (str): PNG path.
        title (str): Figure title.
        size (float): Figure side in inches (pixels = size * dpi).
        dpi (int): Dots per inch.
    """
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(size, size), dpi=dpi)
    ids = sorted(set(int(g) for g in groups))
    cmap = plt.get_cmap('tab10' if len(ids) <= 10 else 'tab20')
    for i, gid in enumerate(ids):
        sel = groups == gid
        label = names[gid] if 0 <= gid < len(names) else str(gid)
        ax.scatter(
            emb[sel, 0],
            emb[sel, 1],
            s=6,
            color=cmap(i % cmap.N),
            label=label,
            linewidths=0,
        )
    if len(ids) <= 20:
        ax.legend(loc='best', fontsize=7, markerscale=2, frameon=False)
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(out_file, dpi=dpi)
    plt.close(fig)
