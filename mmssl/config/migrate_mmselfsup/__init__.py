"""Migrate MMSelfSup 1.x configs to mmssl (docs/en/migrate_mmselfsup.md).

:func:`migrate_path` reads an MMSelfSup config file (or every config of a
folder, ``_base_`` folders skipped), merges its ``_base_`` files and
writes one flat mmssl config per file, with a report of what changed and
what could not be mapped. ``tools/misc/migrate_mmselfsup.py`` is its
command line.
"""

import glob
import os
import os.path as osp
from typing import List

from .core import migrate_cfg_dict, migrate_file
from .report import MigrationReport

__all__ = [
    'MigrationReport',
    'is_mmselfsup_config',
    'migrate_cfg_dict',
    'migrate_file',
    'migrate_path',
]


def is_mmselfsup_config(cfg) -> bool:
    """Whether a loaded config is an MMSelfSup 1.x one (its scope)."""
    return cfg.get('default_scope') == 'mmselfsup'


def _sources(src: str) -> List[str]:
    if osp.isfile(src):
        return [src]
    if not osp.isdir(src):
        raise FileNotFoundError(
            f'{src} is neither a config file nor a folder of configs'
        )
    files = glob.glob(osp.join(src, '**', '*.py'), recursive=True)
    return sorted(
        f for f in files if '_base_' not in osp.relpath(f, src).split(osp.sep)
    )


def _load_error(exc: Exception) -> str:
    if isinstance(exc, ModuleNotFoundError) and 'mmcls' in str(exc):
        return (
            "not migrated: its _base_ is an 'mmcls::' config "
            '(MMClassification, not installed). Evaluate mmssl checkpoints '
            'with tools/eval.py --task linear|finetune instead'
        )
    return f'cannot be loaded: {exc!r}'


def migrate_path(src: str, dst: str) -> List[MigrationReport]:
    """Migrate a config file or a folder of them.

    Args:
        src (str): An MMSelfSup config file, or a folder (searched
            recursively; files under ``_base_`` are bases, not configs).
        dst (str): The output file (for a file ``src`` whose ``dst`` does
            not name a folder) or folder (the same relative paths).

    Returns:
        list[MigrationReport]: One per config; a config that cannot be
        loaded gets a report whose ``unmapped`` says why, and no file.
    """
    reports = []
    folder = osp.isdir(src) or dst.endswith(os.sep) or osp.isdir(dst)
    for path in _sources(src):
        if folder:
            rel = (
                osp.relpath(path, src)
                if osp.isdir(src)
                else osp.basename(path)
            )
            out = osp.join(dst, rel)
        else:
            out = dst
        try:
            text, report = migrate_file(path)
        except Exception as exc:  # a broken file must not stop the folder
            report = MigrationReport(source=path)
            report.cannot('file', _load_error(exc))
            reports.append(report)
            continue
        os.makedirs(osp.dirname(osp.abspath(out)), exist_ok=True)
        with open(out, 'w', encoding='utf-8') as f:
            f.write(text)
        reports.append(report)
    return reports
