"""Does the validation set fit the training data? Checked before training.

A demo config trained on the user's folder (``--cfg-options
train_dataloader.dataset.data_root=...``) still validates on the bundled
demo digits; its kNN figure then describes the digits, not the user's
images. :func:`val_data_warning` says so once at the start, with the way
to validate on a held-out part of the user's own folder.
"""

import os.path as osp
from typing import Any, List, Optional

from mmssl.engine.hooks.run_summary_hook import data_roots
from mmssl.errors import TrainConfigError

#: Where the bundled demo sets live (tools/misc/make_demo_dataset.py and
#: make_shapes_dataset.py write there).
DEMO_ROOTS = ('data/demo', 'data/shapes')

#: How to validate on one's own images, said in the warning and the error.
HOW_TO_VALIDATE = (
    'kNN validation needs labels: put a held-out part of your images in '
    'class sub-folders (ImageNet style: VAL/train/<class>/*.jpg for the '
    'bank, VAL/val/<class>/*.jpg for the queries) and pass --cfg-options '
    'val_dataloader.dataset.bank.data_root=VAL '
    'val_dataloader.dataset.query.data_root=VAL; without labels, turn it '
    'off (val_cfg=None val_dataloader=None val_evaluator=None) and judge '
    'by the loss and pictures (docs/en/custom_dataset.md, "Validation on '
    'your own images")'
)


def _is_demo(path: str) -> bool:
    norm = osp.normpath(path)
    return any(
        norm == root or norm.startswith(root + osp.sep) for root in DEMO_ROOTS
    )


def _val_dataset(cfg: Any) -> Optional[Any]:
    if cfg.get('val_cfg') is None or cfg.get('val_dataloader') is None:
        return None
    return (cfg.get('val_dataloader') or {}).get('dataset')


def val_data_warning(cfg: Any) -> Optional[str]:
    """A warning when training leaves the demo data but validation does not.

    Args:
        cfg (Config): The prepared config.

    Returns:
        str | None: The warning, or None when validation is off, on
        non-demo data, or training is on the demo data too.
    """
    val = _val_dataset(cfg)
    if val is None:
        return None
    train = (cfg.get('train_dataloader') or {}).get('dataset')
    train_roots = data_roots(train)
    val_roots = data_roots(val)
    if not train_roots or all(_is_demo(r) for r in train_roots):
        return None
    demo = [r for r in val_roots if _is_demo(r)]
    if not demo:
        return None
    return (
        f'validation runs on the bundled demo data ({", ".join(demo)}), not '
        f'on your images ({", ".join(train_roots)}): its figures describe '
        f'the demo set. {HOW_TO_VALIDATE}.'
    )


def check_val_data(cfg: Any) -> None:
    """Refuse a validation set whose folders do not exist (before training
    rather than after the first epoch, or with a traceback).

    Raises:
        TrainConfigError: Naming the folder and the two ways out.
    """
    val = _val_dataset(cfg)
    if val is None:
        return
    missing = [r for r in data_roots(val) if not osp.isdir(r)]
    if missing:
        make = (
            ' (make it: python tools/misc/make_demo_dataset.py data/demo)'
            if any(_is_demo(r) for r in missing)
            else ''
        )
        raise TrainConfigError(
            f'validation data {", ".join(missing)} is not a folder{make}. '
            + HOW_TO_VALIDATE
            + '.'
        )


def val_warning_lines(cfg: Any) -> List[str]:
    """:func:`val_data_warning` as a list (empty when none)."""
    warning = val_data_warning(cfg)
    return [warning] if warning else []
