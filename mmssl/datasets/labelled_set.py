"""What the synthetic labelled-set makers share.

``tools/misc/make_multichannel_dataset.py`` and
``tools/misc/make_volume_dataset.py`` write
``OUT/{train,val}/<class>/<index>.<ext>`` with one seed per file
(``--seed``, split, class, index), so a set is the same on every machine,
and take the same command line.
"""

import argparse
import os
import os.path as osp
import time
from typing import Callable, Sequence, Tuple

import numpy as np

SPLIT_SEEDS = {'train': 0, 'val': 1}

#: ``write(folder, class_name, index, seed_sequence)`` writes one file.
WriteOne = Callable[[str, str, int, np.random.SeedSequence], None]


def write_labelled_set(
    out: str,
    classes: Sequence[str],
    train_per_class: int,
    val_per_class: int,
    seed: int,
    write: WriteOne,
) -> Tuple[int, int]:
    """Call ``write`` once per file; returns (number of train, of val)."""
    counts = []
    for split, per_class in (
        ('train', train_per_class),
        ('val', val_per_class),
    ):
        for c, name in enumerate(classes):
            folder = osp.join(out, split, name)
            os.makedirs(folder, exist_ok=True)
            for i in range(per_class):
                key = (seed, SPLIT_SEEDS[split], c, i)
                write(folder, name, i, np.random.SeedSequence(key))
        counts.append(per_class * len(classes))
    return counts[0], counts[1]


def parse_args(
    doc: str,
    argv,
    out_example: str,
    train_per_class: int,
    val_per_class: int,
    min_size: int,
    what: str = 'image side',
) -> argparse.Namespace:
    """The makers' common command line; ``--size`` below ``min_size`` exits."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument('out', help=f'output folder, e.g. {out_example}')
    parser.add_argument('--size', type=int, default=32, help=what)
    parser.add_argument('--train-per-class', type=int, default=train_per_class)
    parser.add_argument('--val-per-class', type=int, default=val_per_class)
    parser.add_argument('--seed', type=int, default=2026)
    args = parser.parse_args(argv)
    if args.size < min_size:
        raise SystemExit(
            f'error: --size must be >= {min_size}, got {args.size}'
        )
    return args


def run(args: argparse.Namespace, make_dataset, describe: str) -> None:
    """``make_dataset(out, size, train, val, seed)`` timed, with a summary."""
    start = time.time()
    n_train, n_val = make_dataset(
        args.out,
        args.size,
        args.train_per_class,
        args.val_per_class,
        args.seed,
    )
    print(
        f'wrote {n_train} train and {n_val} val {describe} to {args.out} '
        f'in {time.time() - start:.1f}s'
    )
