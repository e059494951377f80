"""Warn once when the DINO loss sits at its uniform fixed point ln K."""

import math
from typing import Optional, Union

from mmengine.dist import is_main_process
from mmengine.hooks import Hook, LoggerHook
from mmengine.logging import print_log
from mmengine.model import is_model_wrapper

from mmssl.registry import HOOKS

#: The user guide the warning points to.
GUIDE = 'docs/en/loss_not_decreasing.md'

#: The knobs that move it, in the order to try them, and those that did
#: not alone; the measurements are in the guide (:data:`GUIDE`).
KNOBS = (
    "EMA centering with a sharp teacher: centering='centering' in the DINO "
    '(and iBOT) loss and a teacher temperature of 0.01 '
    '(TeacherTempWarmupHook warmup_temp and temp), with a constant teacher '
    'momentum of 0.99 (TeacherEMAHook end_momentum=0.99); on the digits '
    'demos the loss falls, then climbs part of the way back, so judge the '
    'run by kNN or RankMe too',
)
NOT_ALONE = (
    'fewer prototypes, a sharper or slower teacher, a lower lr or larger '
    'local crops with Sinkhorn-Knopp targets'
)


def fixed_point_message(
    num_prototypes: int,
    loss_key: str,
    loss: Optional[float],
    entropy: Optional[float],
    first_iter: int,
    last_iter: int,
    tolerance: float,
) -> str:
    """The words of the warning (see :class:`UniformCollapseHook`)."""
    ln_k = math.log(num_prototypes)
    seen = []
    if loss is not None:
        seen.append(f'{loss_key} {loss:.4f}')
    if entropy is not None:
        seen.append(f'teacher target entropy {entropy:.3f} of ln K')
    return (
        f'The DINO loss sits at its uniform fixed point: from iteration '
        f'{first_iter} to {last_iter} ({", ".join(seen)}) it stayed within '
        f'{tolerance:.0%} of ln K = ln {num_prototypes} = {ln_k:.4f}. The '
        "teacher's targets are uniform over the prototypes, the student "
        'predicts them, and this term learns nothing (whatever the backbone '
        'learns comes from the other terms). What moves it, in the order '
        f'to try: {"; ".join(KNOBS)}. On the digits demo {NOT_ALONE} did '
        f'not, each alone. See {GUIDE}.'
    )


@HOOKS.register_module()
class UniformCollapseHook(Hook):
    """Warn once when the DINO term is stuck at ln K (uniform targets).

    With K prototypes, uniform teacher targets and uniform student
    predictions give a DINO cross-entropy of exactly ln K, a fixed point
    the loss can sit at for a whole run on small data (the most-asked
    question of the DINO and DINOv2 trackers). At every log interval after
    ``begin`` this hook reads, from the message hub (host values the logger
    reads anyway: no device sync), the DINO loss divided by its weight and
    ``dino_target_entropy`` (the mean entropy of the teacher's targets over
    ln K, returned by :class:`~mmssl.models.algorithms.DINOFamily`). When
    either stays within ``tolerance`` of ln K for ``patience`` intervals
    in a row it logs one warning that names the knobs (:data:`KNOBS`) and
    the guide (:data:`GUIDE`), and keeps it for the run summary
    (:class:`RunSummaryHook`). Models without a ``dino_loss`` are left
    alone.

    Args:
        tolerance (float): Relative distance to ln K. Defaults to 0.02.
        patience (int): Log intervals in a row. Defaults to 5.
        begin (float | str): First iteration checked, or a run fraction
            such as ``'10%'``; never before the end of the teacher
            temperature warm-up (``TeacherTempWarmupHook``). Defaults to
            ``'10%'``.
        interval (int, optional): Iterations between checks. Defaults to
            the logger's interval.
    """

    priority = 'LOW'  # after the runtime info hook has filled the hub

    def __init__(
        self,
        tolerance: float = 0.02,
        patience: int = 5,
        begin: Union[int, str] = '10%',
        interval: Optional[int] = None,
    ) -> None:
        if not 0 < tolerance < 1:
            raise ValueError(f'tolerance must be in (0, 1), got {tolerance}.')
        if patience < 1:
            raise ValueError(f'patience must be >= 1, got {patience}.')
        self.tolerance = tolerance
        self.patience = patience
        self.begin = begin
        self.interval = interval
        self.warning: Optional[str] = None
        self._model = None
        self._begin_iter = 0
        self._since: Optional[int] = None
        self._count = 0

    def before_train(self, runner) -> None:
        model = runner.model
        model = model.module if is_model_wrapper(model) else model
        if not hasattr(getattr(model, 'dino_loss', None), 'out_dim'):
            return  # not a DINO-family model
        self._model = model
        if self.interval is None:
            loggers = [h for h in runner.hooks if isinstance(h, LoggerHook)]
            self.interval = min((h.interval for h in loggers), default=50)
        self._begin_iter = max(
            self._resolve_begin(runner), _warmup_end(runner)
        )

    def _resolve_begin(self, runner) -> int:
        from mmssl.config.run_length import parse_fraction

        fraction = parse_fraction(self.begin)
        if fraction is None:
            return int(self.begin)
        return int(round(fraction * runner.max_iters))

    def after_train_iter(
        self, runner, batch_idx: int, data_batch=None, outputs=None
    ) -> None:
        if self._model is None or self.warning is not None:
            return
        if runner.iter + 1 <= self._begin_iter or not (
            self.every_n_train_iters(runner, int(self.interval))
        ):
            return
        loss_key, loss, entropy = self._read(runner.message_hub)
        ln_k = math.log(self._model.dino_loss.out_dim)
        weight = self._weight()
        near = [
            loss is not None
            and weight > 0
            and abs(loss / weight / ln_k - 1) <= self.tolerance,
            entropy is not None and entropy >= 1 - self.tolerance,
        ]
        if not any(near):
            self._since, self._count = None, 0
            return
        self._since = self._since or runner.iter + 1
        self._count += 1
        if self._count < self.patience:
            return
        self.warning = fixed_point_message(
            self._model.dino_loss.out_dim,
            loss_key,
            loss,
            entropy,
            self._since,
            runner.iter + 1,
            self.tolerance,
        )
        if is_main_process():
            print_log(self.warning, logger='current', level=30)

    def _read(self, hub):
        """(loss key, DINO loss, target entropy) as last logged."""
        keys = getattr(self._model, 'weight_keys', {})
        loss_key = f'loss_{keys.get("dino_cls", "dino_cls")}'

        def last(name: str) -> Optional[float]:
            if f'train/{name}' not in hub.log_scalars:
                return None
            return float(hub.get_scalar(f'train/{name}').current())

        return loss_key, last(loss_key), last('dino_target_entropy')

    def _weight(self) -> float:
        """The DINO term's weight; 0 (no loss check, the entropy alone)
        when the local pairs are weighted apart (``dino_local``): the
        loss is then not ln K at the fixed point."""
        keys = getattr(self._model, 'weight_keys', {})
        weights = getattr(self._model, 'loss_weights', {})
        if weights.get('dino_local', 1.0) != 1.0:
            return 0.0
        return float(weights.get(keys.get('dino_cls', 'dino_cls'), 1.0))


def _warmup_end(runner) -> int:
    """The iteration where the teacher temperature warm-up ends (0 when
    there is none)."""
    from .teacher_temp_warmup_hook import TeacherTempWarmupHook

    ends = [0]
    for hook in runner.hooks:
        if not isinstance(hook, TeacherTempWarmupHook):
            continue
        if hook.warmup_iters is not None:
            ends.append(int(hook.warmup_iters))
        else:
            per_epoch = len(runner.train_dataloader)
            ends.append(int(math.ceil(hook.warmup_epochs * per_epoch)))
    return max(ends)
