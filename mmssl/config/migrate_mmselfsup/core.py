"""Migrate one MMSelfSup 1.x config: load it with its ``_base_`` files,
rewrite the flat result, write it as one mmssl config file."""

import os.path as osp
from typing import Any, Dict, Tuple

from ..keys import CONVENTIONAL_VARIABLES, KNOWN_TOP_LEVEL_KEYS
from .algorithms import MODEL_RULES, clustering_hooks, flip_momentum
from .modules import MODULE_RULES, RENAMED, WHY
from .report import MigrationReport, strip_scope, walk
from .transforms import TRANSFORM_RULES

#: mmssl's runtime keys that every migrated config gets
RUNTIME = dict(
    default_scope='mmssl',
    runner_type='SSLRunner',
)

#: MMSelfSup hooks mmssl has no counterpart for, with the reason
DROPPED_HOOKS = {
    'SelfSupVisualizationHook': 'mmssl draws reconstructions with '
    'tools/misc/mae_visualization.py instead',
}


def _visit(report: MigrationReport):
    def visit(d: Dict[str, Any], where: str):
        name = strip_scope(d['type'])
        if name != d['type']:
            report.change(where, f"type '{d['type']}' -> '{name}'")
            d = dict(d, type=name)
        if name in DROPPED_HOOKS:
            report.cannot(where, f'{name} dropped: {DROPPED_HOOKS[name]}')
            return None
        rule = TRANSFORM_RULES.get(name) or MODULE_RULES.get(name)
        if rule is not None:
            return rule(d, where, report)
        if name in RENAMED:
            why = f' ({WHY[name]})' if name in WHY else ''
            report.change(where, f'{name} -> {RENAMED[name]}{why}')
            return dict(d, type=RENAMED[name])
        return d

    return visit


def _top_level(cfg: Dict[str, Any], report: MigrationReport) -> None:
    """Drop MMSelfSup's helper variables (their values are already in the
    dicts that used them); ``optimizer`` becomes ``optim_wrapper``'s."""
    optimizer = cfg.pop('optimizer', None)
    if optimizer is not None:
        wrapper = cfg.get('optim_wrapper')
        if not isinstance(wrapper, dict):
            cfg['optim_wrapper'] = dict(
                type='OptimWrapper', optimizer=optimizer
            )
            report.change('optimizer', 'moved into optim_wrapper.optimizer')
        elif wrapper.get('optimizer') != optimizer:
            report.change(
                'optimizer',
                'dropped: differs from optim_wrapper.optimizer, which '
                'MMSelfSup used (kept)',
            )
        else:
            report.change(
                'optimizer', 'dropped (the same as optim_wrapper.optimizer)'
            )
    known = KNOWN_TOP_LEVEL_KEYS | CONVENTIONAL_VARIABLES
    for key in sorted(k for k in list(cfg) if k not in known):
        cfg.pop(key)
        report.change(
            key, 'helper variable dropped (its value is already used)'
        )
    if isinstance(cfg.get('dataset_type'), str):
        cfg['dataset_type'] = strip_scope(cfg['dataset_type'])
    for key in ('train_pipeline', 'val_pipeline', 'test_pipeline'):
        if key in cfg and 'train_dataloader' in cfg:
            cfg.pop(key)  # a copy of the dataloader's own pipeline


def _runtime(cfg: Dict[str, Any], report: MigrationReport) -> None:
    scope = cfg.get('default_scope')
    if scope != 'mmssl':
        report.change('default_scope', f"{scope!r} -> 'mmssl'")
    cfg.update(RUNTIME)
    log = cfg.get('log_processor')
    if isinstance(log, dict):
        log['type'] = 'UnresolvedLogProcessor'
    if cfg.get('randomness') is None:
        cfg['randomness'] = dict(seed=None)
        report.change(
            'randomness',
            "not set -> dict(seed=None) (mmengine's default: a random seed)",
        )
    vis = cfg.get('visualizer')
    if isinstance(vis, dict) and 'name' in vis:
        vis.pop('name')  # one name per process; mmengine picks it


def migrate_cfg_dict(
    cfg: Dict[str, Any], source: str = ''
) -> Tuple[Dict[str, Any], MigrationReport]:
    """Rewrite a flat MMSelfSup 1.x config dict into an mmssl one.

    Args:
        cfg (dict): The loaded config (``_base_`` merged), changed in place.
        source (str): Its file, for the report.

    Returns:
        tuple: The mmssl config dict and the report.
    """
    report = MigrationReport(source=source)
    _top_level(cfg, report)
    model = cfg.get('model')
    if isinstance(model, dict):
        pre = model.get('data_preprocessor')
        if isinstance(pre, dict) and 'type' not in pre:
            pre['type'] = 'SelfSupDataPreprocessor'  # MMSelfSup's default
        rule = MODEL_RULES.get(strip_scope(str(model.get('type'))))
        if rule is not None:
            model = rule(model, report)
        cfg['model'] = flip_momentum(model, report)
    visit = _visit(report)
    for key in list(cfg):
        cfg[key] = walk(cfg[key], key, visit)
    clustering_hooks(cfg, report)
    _runtime(cfg, report)
    return cfg, report


def migrate_file(src: str) -> Tuple[str, MigrationReport]:
    """Load and migrate one MMSelfSup config file.

    Returns:
        tuple: The mmssl config as Python source and the report.
    """
    from mmengine.config import Config

    from ..reading import load_config

    loaded = load_config(src)
    cfg, report = migrate_cfg_dict(loaded.to_dict(), source=src)
    header = (
        f'# Migrated from the MMSelfSup 1.x config {osp.basename(src)} by\n'
        '# tools/misc/migrate_mmselfsup.py (_base_ files merged in).\n'
    )
    text = Config(cfg).pretty_text
    return header + text, report
