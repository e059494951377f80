"""iBOT and DINOv2 ``loss()`` against an independent float64 oracle.

The oracle runs the backbones and heads itself, one view at a time, with
the masks of each (image, crop) written out by hand below, and computes
every loss term with plain Python loops that share no code with
``mmssl.models.losses`` (same model as ``test_dino_losses.py``):

* DINO term: mean over (teacher global view t, student view s != t) of
  the batch mean of ``-sum_k q_t log p_s`` on the CLS logits.
* iBOT term: for every (crop, image) the mean over its masked patches of
  the same cross-entropy, teacher and student patch at the same position;
  then the mean over all G * B crop-images (unmasked ones count as 0).
* KoLeo term: its weight times the sum over the global crops of
  ``-mean_i log(min_j ||x_i - x_j|| + 1e-8)`` on the L2-normalised
  student backbone CLS tokens of that crop.

Drop path is off, the teacher is perturbed away from the student and the
student mask token is random, so a mixed-up teacher/student, an unmasked
student or a shifted patch pairing all change the values.
"""

import math

import pytest
import torch
from mmpretrain.structures import DataSample

from mmssl.registry import MODELS

# logged with the loss terms, not summed (UniformCollapseHook)
DINO_LOGGED = {'dino_target_entropy', 'dino_student_entropy'}

K, G, GRID = 16, 2, 4  # prototypes, global crops, 4x4 patches per crop
T_TEACHER, T_STUDENT = 0.04, 0.1
# masked patch ids of (image, crop); every pair differs, some are empty
MASKED = {
    (0, 0): [0, 5],
    (0, 1): [15],
    (1, 0): [],
    (1, 1): [1, 2, 3, 9, 10],
    (2, 0): [4, 6, 7],
    (2, 1): [],
}


def _head():
    return dict(
        type='DINOHead',
        in_channels=32,
        n_prototypes=K,
        hidden_channels=32,
        bottleneck_channels=8,
    )


def _model(algo, separate=False, sinkhorn=False, **kw):
    centering = 'sinkhorn_knopp' if sinkhorn else 'centering'
    cfg = dict(
        type=algo,
        backbone=dict(
            type='DINOVisionTransformer',
            arch=dict(
                embed_dims=32,
                num_layers=2,
                num_heads=2,
                feedforward_channels=64,
            ),
            img_size=32,
            patch_size=8,
            out_type='raw',
            drop_path_rate=0.0,
        ),
        head=_head(),
        loss=dict(type='DINOLoss', out_dim=K, centering=centering),
        ibot_loss=dict(type='iBOTPatchLoss', out_dim=K, centering=centering),
        **kw,
    )
    if separate:
        cfg['patch_head'] = _head()
    torch.manual_seed(0)
    model = MODELS.build(cfg)
    with torch.no_grad():
        model.backbone.mask_token.normal_()
        for p in model.teacher.parameters():  # teacher != student
            p.add_(0.05 * torch.randn_like(p))
    return model


def _views():
    g = torch.Generator().manual_seed(1)
    big = [torch.randn(3, 3, 32, 32, generator=g) for _ in range(G)]
    return big + [torch.randn(3, 3, 16, 16, generator=g) for _ in range(2)]


def _samples(bound=None):
    """Masks of MASKED; ``bound``: the fixed masked-patch buffer size
    (``block_mask_collate``'s metainfo), None for ``tokens[masks]``."""
    out = []
    for b in range(3):
        mask = torch.zeros(G, GRID * GRID, dtype=torch.bool)
        for g in range(G):
            mask[g, MASKED[(b, g)]] = True
        out.append(DataSample().set_mask(mask.view(G, GRID, GRID)))
        if bound is not None:
            out[-1].set_metainfo(dict(num_masked_max=bound))
    return out


def _softmax(v, temp):
    m = max(x / temp for x in v)
    e = [math.exp(x / temp - m) for x in v]
    return [x / sum(e) for x in e]


def _log_softmax(v, temp):
    m = max(x / temp for x in v)
    lse = m + math.log(sum(math.exp(x / temp - m) for x in v))
    return [x / temp - lse for x in v]


def _ce(target, logits):
    logp = _log_softmax(logits, T_STUDENT)
    return -sum(q * lp for q, lp in zip(target, logp))


def _sinkhorn(rows, temp, iters=3):
    """Rows of targets; column b of Q (K x B) made to sum to 1/B."""
    n, k = len(rows), len(rows[0])
    q = [[math.exp(rows[b][i] / temp) for b in range(n)] for i in range(k)]
    total = sum(map(sum, q))
    q = [[x / total for x in r] for r in q]
    for _ in range(iters):
        q = [[x / sum(r) / k for x in r] for r in q]
        cols = [sum(q[i][b] for i in range(k)) for b in range(n)]
        q = [[q[i][b] / cols[b] / n for b in range(n)] for i in range(k)]
    return [[q[i][b] * n for i in range(k)] for b in range(n)]


def _targets(rows, sinkhorn):
    if sinkhorn:
        return _sinkhorn(rows, T_TEACHER)
    return [_softmax(r, T_TEACHER) for r in rows]  # centre starts at 0


def _koleo(feats):
    xs = [[v / math.sqrt(sum(c * c for c in f)) for v in f] for f in feats]
    total = 0.0
    for i, x in enumerate(xs):
        d = min(
            math.sqrt(sum((a - c) ** 2 for a, c in zip(x, y)))
            for j, y in enumerate(xs)
            if j != i
        )
        total += -math.log(d + 1e-8)
    return total / len(xs)


@torch.no_grad()
def _oracle(model, views, sinkhorn):
    """(dino, ibot, koleo) from the sub-modules, one view at a time."""
    batch, nv = views[0].shape[0], len(views)
    t_head, s_head = model.teacher['head'], model.head
    t_phead = model.teacher['patch_head'] if model.patch_head else t_head
    s_phead = model.patch_head or s_head
    t_tok, s_tok = [], []
    for g in range(G):
        mask = torch.zeros(batch, GRID * GRID, dtype=torch.bool)
        for b in range(batch):
            mask[b, MASKED[(b, g)]] = True
        t_tok.append(model.teacher['backbone'](views[g])[0].double())
        s_tok.append(model.backbone(views[g], mask=mask)[0].double())
    s_cls = [s[:, 0] for s in s_tok]
    s_cls += [model.backbone(v)[0][:, 0].double() for v in views[G:]]
    # DINO: CLS logits, pairs of different views
    t_rows = [t_head(t_tok[g][:, 0].float()).tolist() for g in range(G)]
    q = _targets(sum(t_rows, []), sinkhorn)
    s_rows = [s_head(c.float()).tolist() for c in s_cls]
    pairs = [(t, s) for t in range(G) for s in range(nv) if s != t]
    dino = sum(
        sum(_ce(q[t * batch + b], s_rows[s][b]) for b in range(batch)) / batch
        for t, s in pairs
    ) / len(pairs)
    # iBOT: same (crop, image, patch) for teacher and student
    keys = [(g, b, p) for (b, g), ps in MASKED.items() for p in ps]
    t_p = [t_phead(t_tok[g][b, 1 + p].float()[None])[0] for g, b, p in keys]
    s_p = [s_phead(s_tok[g][b, 1 + p].float()[None])[0] for g, b, p in keys]
    qp = _targets([r.tolist() for r in t_p], sinkhorn)
    ce = [_ce(qp[i], s_p[i].tolist()) for i in range(len(keys))]
    ibot = 0.0
    for (b, g), ps in MASKED.items():
        mine = [c for c, key in zip(ce, keys) if key[:2] == (g, b)]
        ibot += sum(mine) / len(ps) if ps else 0.0
    ibot /= G * batch
    koleo = sum(_koleo(s_cls[g].tolist()) for g in range(G))
    return dino, ibot, koleo


@pytest.mark.parametrize('separate', [False, True])
def test_ibot_loss_values_match_oracle(separate):
    model = _model('iBOT', separate=separate, loss_weights=dict(ibot=1.5))
    views = _views()
    dino, ibot, _ = _oracle(model, views, sinkhorn=False)
    losses = model.loss(views, _samples())
    assert set(losses) == {'loss_dino', 'loss_ibot'} | DINO_LOGGED
    assert losses['loss_dino'].item() == pytest.approx(dino, rel=1e-5)
    assert losses['loss_ibot'].item() == pytest.approx(1.5 * ibot, rel=1e-5)


@pytest.mark.parametrize('sinkhorn', [False, True])
@pytest.mark.parametrize('bound', [None, 11, 20])  # 11 patches are masked
def test_dinov2_loss_values_match_oracle(sinkhorn, bound):
    model = _model(
        'DINOv2',
        sinkhorn=sinkhorn,
        loss_weights=dict(dino=0.7, ibot=1.3, koleo=0.5),
    )
    views = _views()
    dino, ibot, koleo = _oracle(model, views, sinkhorn=sinkhorn)
    rows = []  # rows the student head sees: 4 x 3 CLS + masked patches
    model.head.register_forward_hook(lambda m, i, o: rows.append(len(i[0])))
    losses = model.loss(views, _samples(bound))
    assert rows == [12 + (bound or 11)]  # one call, the buffer size
    assert (
        set(losses) == {'loss_dino', 'loss_ibot', 'loss_koleo'} | DINO_LOGGED
    )
    assert losses['loss_dino'].item() == pytest.approx(0.7 * dino, rel=1e-5)
    assert losses['loss_ibot'].item() == pytest.approx(1.3 * ibot, rel=1e-5)
    assert losses['loss_koleo'].item() == pytest.approx(0.5 * koleo, rel=1e-5)
