"""What the online feature evaluations share (kNN, RankMe).

:class:`FeatureEvalHook` runs an evaluation every N epochs or iterations
(and optionally before training), finds the module whose features are
evaluated, builds non-shuffling dataloaders, gives every module its
train/eval mode back, gathers the per-sample results of all ranks and
logs the figures to the message hub and the visualizer. A subclass
implements :meth:`FeatureEvalHook.evaluate`.
"""

from contextlib import contextmanager
from typing import Callable, Iterator

import torch
from mmengine.dist import collect_results, get_backend, get_world_size
from mmengine.hooks import Hook

from mmssl.checkpoint.state_dict import TEACHER_BACKBONE_PATHS
from mmssl.models.utils.model_parts import find_backbone

_CLS_KEYS = ('x_norm_clstoken', 'cls_token', 'cls', 'x')

#: The feature source named when no backbone is picked.
TENSOR_MODE = "model(x, mode='tensor')"


def _as_tensor(out):
    """Turn a dict output (e.g. DINOv2 style) into a tensor or tuple."""
    if isinstance(out, dict):
        for key in _CLS_KEYS:
            if key in out:
                return out[key]
        return next(v for v in out.values() if torch.is_tensor(v))
    return out


@contextmanager
def kept_modes(model: torch.nn.Module) -> Iterator[None]:
    """Give every module of ``model`` its train/eval mode back on exit."""
    modes = {m: m.training for m in model.modules()}
    try:
        yield
    finally:
        for m, mode in modes.items():
            m.training = mode


def build_eval_loader(cfg: dict, seed: int | None = None):
    """A dataloader from ``cfg`` with, unless given, a non-shuffling
    ``DefaultSampler`` (each rank gets its shard, in order) and
    ``default_collate``, its workers capped at the cores available.
    ``cfg['dataset']`` may be a built dataset."""
    from mmengine.runner import Runner

    from mmssl.engine.runner.workers import fit_dataloader_to_machine

    # workers capped at the cores (torch warns about more, once per
    # loader): a training config's 8 workers on a 2-core machine
    cfg, _ = fit_dataloader_to_machine(dict(cfg))
    cfg.setdefault('sampler', dict(type='DefaultSampler', shuffle=False))
    cfg.setdefault('collate_fn', dict(type='default_collate'))
    if not cfg.get('num_workers'):
        cfg['persistent_workers'] = False
    return Runner.build_dataloader(cfg, seed=seed)


def gather_results(results: list, size: int) -> list:
    """The per-sample ``results`` of every rank, in dataset order, without
    the sampler's padding (``size`` = length of the dataset)."""
    if get_world_size() > 1:
        # NCCL: gather through GPU memory (no shared disk needed across
        # nodes); gloo: mmengine's CPU path through a temporary folder
        device = 'gpu' if get_backend() == 'nccl' else 'cpu'
        return collect_results(results, size, device=device)
    return results[:size]


class FeatureEvalHook(Hook):
    """Base of the hooks that evaluate the backbone's features online.

    Args:
        interval (int): Evaluate every ``interval`` epochs (``by_epoch``)
            or iterations.
        by_epoch (bool): Count epochs rather than iterations.
        backbone_path (str, optional): Dotted path of the module to
            evaluate (its output is pooled); overrides the automatic
            choice.
        prefer_teacher (bool): Use the teacher's backbone when there is
            one (:data:`mmssl.checkpoint.state_dict.TEACHER_BACKBONE_PATHS`),
            otherwise ``model(inputs, mode='tensor')``.
        eval_before_train (bool): Also evaluate before training starts
            (the random-init baseline).
        prefix (str): Name prefix of the logged scalars.
    """

    priority = 'LOW'

    def __init__(
        self,
        interval: int = 1,
        by_epoch: bool = True,
        backbone_path: str | None = None,
        prefer_teacher: bool = True,
        eval_before_train: bool = False,
        prefix: str = '',
    ) -> None:
        if interval < 1:
            raise ValueError(f'interval must be >= 1, got {interval}')
        self.interval = interval
        self.by_epoch = by_epoch
        self.backbone_path = backbone_path
        self.prefer_teacher = prefer_teacher
        self.eval_before_train = eval_before_train
        self.prefix = prefix
        self.last_metrics: dict = {}
        self._iters_done: int | None = None

    def evaluate(self, runner, step: int | None = None) -> dict:
        """Run one evaluation; return (and log) its figures."""
        raise NotImplementedError

    # ---------------------------------------------------------------- hooks
    def before_train(self, runner) -> None:
        if self.eval_before_train:  # step 0, or where a resume starts
            self.evaluate(runner, step=self._resolve_step(None, runner))

    def after_train_epoch(self, runner) -> None:
        if self.by_epoch and self.every_n_epochs(runner, self.interval):
            self.evaluate(runner, step=runner.epoch + 1)

    def after_train_iter(
        self, runner, batch_idx: int, data_batch=None, outputs=None
    ) -> None:
        if not self.by_epoch and self.every_n_train_iters(
            runner, self.interval
        ):
            # runner.iter counts this iteration only after the hooks ran
            self._iters_done = runner.iter + 1
            try:
                self.evaluate(runner, step=runner.iter + 1)
            finally:
                self._iters_done = None

    # ------------------------------------------------------------ helpers
    def _feature_fn(self, model) -> tuple[Callable | None, str]:
        """``fn(model, inputs)`` giving the evaluated features (None:
        ``model(inputs, mode='tensor')``) and the name of its source."""
        module = getattr(model, 'module', model)
        if self.backbone_path is not None:
            backbone, path = find_backbone(module, path=self.backbone_path)
        elif self.prefer_teacher:
            backbone, path = find_backbone(module, prefer_teacher=True)
            if path not in TEACHER_BACKBONE_PATHS:
                return None, TENSOR_MODE
        else:
            return None, TENSOR_MODE
        return (lambda _m, x: _as_tensor(backbone(x))), path

    def _resolve_step(self, step: int | None, runner) -> int:
        """``step``, or the current epoch (``by_epoch``) or iteration."""
        if step is None:
            step = runner.epoch if self.by_epoch else runner.iter
        return step

    def _step_name(self, step: int) -> str:
        return f'{"epoch" if self.by_epoch else "iter"} {step}'

    def _log_scalars(self, runner, result: dict) -> None:
        """``result`` to the message hub and every visualizer backend, at
        the number of finished iterations (the step of the last training
        line; 0 before training)."""
        for key, value in result.items():
            runner.message_hub.update_scalar(key, value)
        done = runner.iter if self._iters_done is None else self._iters_done
        runner.visualizer.add_scalars(result, step=done)
