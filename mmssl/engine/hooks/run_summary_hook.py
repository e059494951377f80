"""The closing lines of a run: where it is, and what was measured on what."""

import os.path as osp
from typing import Any, Dict, List, Optional

from mmengine.dist import is_main_process
from mmengine.hooks import Hook

from mmssl.registry import HOOKS


def data_roots(dataset_cfg: Any) -> List[str]:
    """Every ``data_root`` (with its ``data_prefix``) in a dataset config,
    nested ones (kNN bank and query, wrapped datasets) included.

    Args:
        dataset_cfg (Any): A dataset config (dict), a list of them, or
            anything else (no roots).

    Returns:
        list[str]: The roots, in the order found, without repeats.
    """
    found: List[str] = []

    def walk(item: Any) -> None:
        if isinstance(item, (list, tuple)):
            for x in item:
                walk(x)
            return
        if not isinstance(item, dict):
            return
        root = item.get('data_root')
        prefix = item.get('data_prefix')
        if isinstance(prefix, dict):
            prefix = prefix.get('img_path') or prefix.get('img')
        for r in root if isinstance(root, (list, tuple)) else [root]:
            if isinstance(r, str) and r:
                path = osp.join(r, prefix) if isinstance(prefix, str) else r
                if path not in found:
                    found.append(path)
        for key, value in item.items():
            if key not in ('data_root', 'pipeline'):
                walk(value)

    walk(dataset_cfg)
    return found


def describe_val_data(cfg: Any) -> str:
    """``'bank X, queries Y'`` for a kNN set, else the roots joined."""
    dataset = (cfg.get('val_dataloader') or {}).get('dataset') or {}
    if isinstance(dataset, dict) and 'bank' in dataset and 'query' in dataset:
        bank = ', '.join(data_roots(dataset['bank'])) or '?'
        query = ', '.join(data_roots(dataset['query'])) or '?'
        return f'bank {bank}, queries {query}'
    return ', '.join(data_roots(dataset)) or 'the validation set'


def _last_checkpoint(work_dir: str) -> Optional[str]:
    pointer = osp.join(work_dir, 'last_checkpoint')
    if not osp.isfile(pointer):
        return None
    with open(pointer) as f:
        return f.read().strip() or None


def config_copy(runner) -> str:
    """The config to evaluate the run with: the work dir's copy that the
    runner dumps (``Runner.dump_config``: the ``--cfg-options`` and the
    environment variables it read are in it, so a later command sees the
    run's data and model), else the config's own file, else ``CONFIG``."""
    filename = getattr(runner.cfg, 'filename', None)
    if filename:
        dumped = osp.join(runner.work_dir, osp.basename(filename))
        return dumped if osp.isfile(dumped) else filename
    return 'CONFIG'


def _logged_rankme(runner) -> Optional[tuple]:
    """(first, last) ``rank/rankme`` logged by RankMeHook, or None."""
    hub = getattr(runner, 'message_hub', None)
    if hub is None or 'rank/rankme' not in hub.log_scalars:
        return None
    values = hub.get_scalar('rank/rankme').data[0]
    return (float(values[0]), float(values[-1])) if len(values) else None


def _collapse_warnings(runner) -> List[str]:
    """The warnings kept by the run's hooks (``UniformCollapseHook``'s
    ``warning``: the DINO loss at its fixed point ln K)."""
    found = []
    for hook in getattr(runner, 'hooks', None) or []:
        warning = getattr(hook, 'warning', None)
        if isinstance(warning, str) and warning:
            found.append(f'warning: {warning}')
    return found


@HOOKS.register_module()
class RunSummaryHook(Hook):
    """After training: the work dir, the last checkpoint and each metric
    with the data it was computed on (rank 0 only)."""

    priority = 'VERY_LOW'

    def __init__(self) -> None:
        self.metrics: Dict[str, Any] = {}

    def after_val_epoch(self, runner, metrics=None) -> None:
        self.metrics = dict(metrics or {})

    def summary_lines(self, runner) -> List[str]:
        """The closing lines (see the class docstring)."""
        cfg = runner.cfg
        train = (cfg.get('train_dataloader') or {}).get('dataset') or {}
        lines = [
            f'run finished: {runner.iter} iterations; work dir '
            f'{osp.abspath(runner.work_dir)}',
            f'trained on {", ".join(data_roots(train)) or "?"}',
        ]
        for hook in getattr(runner, 'hooks', []):
            line = getattr(hook, 'summary_line', lambda: None)()
            if line:
                lines.append(line)
        ckpt = _last_checkpoint(runner.work_dir)
        lines.append(f'last checkpoint: {ckpt or "none saved"}')
        if self.metrics:
            values = ', '.join(
                f'{k} {v:.2f}' if isinstance(v, float) else f'{k} {v}'
                for k, v in self.metrics.items()
            )
            lines.append(f'{values} on {describe_val_data(cfg)}')
            lines += _collapse_warnings(runner)
        else:
            lines.append('no validation metric (no validation ran)')
            rank = _logged_rankme(runner)
            if rank:
                lines.append(
                    f'rank/rankme {rank[1]:.2f} (first logged {rank[0]:.2f},'
                    ' RankMeHook) on images of the training data'
                )
            lines += _collapse_warnings(runner)
            lines.append(
                f'judge it: python tools/eval.py {config_copy(runner)} '
                f'--checkpoint {ckpt or "CKPT"} --task rank (no labels '
                'needed: RankMe against the random init), or --task knn '
                '--data ROOT (labelled ROOT/train and ROOT/val folders)'
            )
        return lines

    def after_train(self, runner) -> None:
        if not is_main_process():
            return
        for line in self.summary_lines(runner):
            runner.logger.info(line)
