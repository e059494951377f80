"""The evaluation tasks behind ``tools/eval.py`` and ``tools/misc/``.

- :mod:`.evaluate`: one function per ``tools/eval.py --task`` (knn,
  linear, seg, depth, finetune) and their shared settings;
- :mod:`.knn_eval`: the kNN / linear evaluation (``tools/misc/knn_eval.py``
  and ``--task knn|linear``) through the test loop and its metric;
- :mod:`.rank_eval`: RankMe of a checkpoint (``--task rank``);
- :mod:`.lr_sweep`: linear-probe learning rates (``tools/misc/lr_sweep.py``).

They build runners (:mod:`mmssl.engine`), so they sit above it; the
caller fills the registries first (``register_all_modules``).
"""
