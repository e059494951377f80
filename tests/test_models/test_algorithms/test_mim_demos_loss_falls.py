"""Demos whose probe cannot show learning: their pretext loss falls.

Issue 16 judges masked-image models by a linear probe and by their
reconstruction loss falling. On the digits the probe of these demos is
level with random init or below it (a random tiny ViT is near the digits'
ceiling, and the BEiT, CAE and MILAN-style targets are random networks:
configs/<algo>/README.md, "Linear probe on frozen features"), and the
DINOv3 demo's kNN gain is too small and late for the suite
(configs/dinov3/README.md). What is left to guard is the training loss of
the demo's own pretext task.

Measure: the demo trains on the digits for its first ``iters``
iterations, its schedules unchanged (``LossCurve`` stops the run inside
epoch 1, so the learning rate is that of the warm-up's start: 0.1x to
0.45x the peak for the 4-epoch demos, under 0.25x for DINOv3's
22-iteration warm-up); the loss of every iteration is recorded
(``outputs['loss']``, the sum of the algorithm's loss terms). The mean
of the last 2 must lie below the mean of the first 2 by more than
``margin`` (relative).

Margin: about half the drop measured with the demo as is, and at least 4x
the largest drop of any window of the same length in a 30-iteration run
at learning rate 0 (where only the masks, crops and batches change).
Measured 2026-11-26 (one thread, seed 0, ``num_workers=0``; first-2 mean
-> last-2 mean, relative drop):

==========  =====  ======================  =====================  ======
demo        iters  lr as configured        lr 0 (worst window)    margin
==========  =====  ======================  =====================  ======
MAE         6      1.176 -> 0.953, 19.0 %  1.199 -> 1.199 (1.7)   8 %
EVA         5      1.645 -> 1.064, 35.3 %  1.726 -> 1.728 (0.2)   15 %
MILAN       5      2.018 -> 1.460, 27.6 %  2.083 -> 2.078 (0.4)   12 %
CAE         5      7.809 -> 6.840, 12.4 %  7.931 -> 7.960 (0.3)   5 %
SparK       4      2.174 -> 1.824, 16.1 %  2.244 -> 2.253 (2.0)   8 %
MixMIM      8      1.337 -> 1.218, 8.9 %   1.346 -> 1.344 (0.2)   4 %
MaskFeat    4      0.394 -> 0.244, 38.1 %  0.444 -> 0.443 (0.5)   15 %
BEiT        4      4.040 -> 3.721, 7.9 %   4.113 -> 4.108 (0.2)   3.5 %
BEiT v2     6      8.346 -> 8.151, 2.3 %   8.373 -> 8.386 (0.2)   1 %
DINOv3      8      8.794 -> 8.563, 2.6 %   8.794 -> 8.803 (0.2)   1.2 %
==========  =====  ======================  =====================  ======

DINOv3 re-measured 2026-11-29 with its plain prototype layers
(``DINOHead(weight_norm=False)``, as facebookresearch/dinov3): its loss
starts lower and falls more slowly at first (5 iterations: 1.4 % against
0.24 % at lr 0), so it runs 8 (measured with this module's ``demo_cfg``
and ``LossCurve``: 30 iterations at lr 0, 12 as configured; the
weight-normalised heads gave 9.787 -> 9.394, 4.0 % in 5).

Broken on purpose (``optim_wrapper.optimizer.lr=0``), every case fails
with the lr-0 figures above. Notes per demo:

- BEiT and BEiT v2: the tokenizers are random, so a cross-entropy falls
  from about ln 64 = 4.159 (a uniform guess over the 64 codes) towards the
  entropy of the code histogram and no further (configs/beit/README.md:
  2.01 nats, the full demo ends at 2.106; configs/beitv2/README.md: 4.03,
  each of its two terms ends at 3.955, a sum of 7.91): BEiT v2 has only
  about 0.4 nats to lose in the whole demo, hence its small margin, still
  5x its lr-0 noise.
- DINOv3: the DINO CLS + iBOT patch + KoLeo loss (Gram anchoring starts at
  iteration 110). Sinkhorn-Knopp centering keeps the teacher's targets
  spread over the prototypes, so the loss cannot fall by collapsing; at
  lr 0 the student stays the teacher's copy and the loss only wanders with
  the crops. The DINO term alone separates as clearly (iteration 1 -> 5:
  6.232 -> 5.947, against 6.232 -> 6.214 at lr 0).
- MAE: the target is per-patch normalised pixels, whose mean square is at
  most 1, the loss of predicting zeros; the loss starts at 1.20 and is
  below 1 from iteration 5 on (0.969, 0.936).

What it does not catch: an encoder that stops learning while the rest
does. With the backbone frozen (``paramwise_cfg`` ``backbone`` lr_mult 0)
the decoders and heads alone still pass for MAE (1.180 -> 0.968, 18.0 %),
EVA (31.9 %), MILAN (21.1 %), CAE (8.1 %), MixMIM (8.6 %), SparK (8.4 %)
and DINOv3 (3.2 %); BEiT (1.5 %) and MaskFeat (3.4 %), whose head or
neck is one linear layer, and BEiT v2 (0.8 %, a one-layer neck and a
linear head) fail. Telling the encoder's share apart
needs longer runs than the suite's budget allows.

Runtime (``pytest -n 0 --durations=0``, one thread, shared 2-core
machine): 39.6 s of calls for all ten, 46.7 s with pytest's start; SparK
7.4, MaskFeat 6.4, DINOv3 5.2, CAE 4.2, BEiT v2 3.9, BEiT 3.2, MixMIM
3.2, MAE 2.4, MILAN 2.0, EVA 1.6 s.
"""

import pytest

from mmssl.engine.runner import build_runner
from tests.support.learns import LossCurve, demo_cfg, one_thread  # noqa: F401

K = 2  # iterations averaged at each end of the curve

# (config, iterations, margin): see the module docstring's table
CASES = {
    'mae': ('configs/mae/mae_vit-tiny-p4_1xb64-4e_demo.py', 6, 0.08),
    'eva': ('configs/eva/eva-mae-style_vit-tiny-p4_1xb64-4e_demo.py', 5, 0.15),
    'milan': ('configs/milan/milan_vit-tiny-p4_1xb64-4e_demo.py', 5, 0.12),
    'cae': ('configs/cae/cae_vit-tiny-p4_1xb64-4e_demo.py', 5, 0.05),
    'spark': ('configs/spark/spark_sparse-resnet18_1xb64-4e_demo.py', 4, 0.08),
    'mixmim': ('configs/mixmim/mixmim_mixmim-tiny_1xb64-4e_demo.py', 8, 0.04),
    'maskfeat': (
        'configs/maskfeat/maskfeat_vit-tiny-p4_1xb64-4e_demo.py',
        4,
        0.15,
    ),
    'beit': ('configs/beit/beit_vit-tiny-p4_1xb64-4e_demo.py', 4, 0.035),
    'beitv2': ('configs/beitv2/beitv2_vit-tiny-p4_1xb64-4e_demo.py', 6, 0.01),
    'dinov3': (
        'configs/dinov3/dinov3_vit-tiny-p4_1xb64-10e_demo.py',
        8,
        0.012,
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize('name', list(CASES))
def test_demo_loss_falls(name, demo_data_root, tmp_path):
    """The demo's training loss, mean of its last ``K`` iterations out of
    the first ``iters``, lies more than ``margin`` (relative) below the
    mean of its first ``K`` (figures in the module docstring)."""
    config, iters, margin = CASES[name]
    cfg = demo_cfg(config, demo_data_root, tmp_path)
    runner = build_runner(cfg)
    curve = LossCurve(iters)
    runner.register_hook(curve)
    runner.train()
    losses = curve.losses
    assert len(losses) == iters, losses
    first, last = sum(losses[:K]) / K, sum(losses[-K:]) / K
    print(f'{name}: {first:.3f} -> {last:.3f}, losses {losses}')
    assert last < first * (1 - margin), (
        f'{name}: the loss fell from {first:.4f} to {last:.4f} '
        f'({1 - last / first:.1%}) in {iters} iterations, less than the '
        f'{margin:.1%} measured training gives: the demo stopped learning'
    )
