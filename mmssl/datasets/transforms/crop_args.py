"""Arguments of the crop transforms, checked with errors that name them.

Sizes are an int or ``(h, w)``; probabilities a float for every view or
one per view; ranges ``(low, high)``.
"""

from typing import List, Sequence, Tuple, Union

import numpy as np

SizeType = Union[int, Sequence[int]]
ProbType = Union[float, Sequence[float]]


def size_pair(size: SizeType, name: str) -> Tuple[int, int]:
    """Turn ``int`` or ``(h, w)`` into ``(h, w)`` with a clear error."""
    if isinstance(size, (int, np.integer)):
        size = (int(size), int(size))
    size = tuple(int(s) for s in size)
    if len(size) != 2 or min(size) <= 0:
        raise ValueError(
            f'{name} must be a positive int or (h, w), got {size!r}.'
        )
    return size


def view_probs(p: ProbType, n: int, name: str) -> List[float]:
    """Per-view probabilities: a float for all views or one per view.

    A sequence shorter than ``n`` is padded with its last value.
    """
    if isinstance(p, (int, float)):
        out = [float(p)] * n
    else:
        out = [float(x) for x in p]
        if n and not out:
            raise ValueError(f'{name} is empty but {n} views need a value.')
        out = (out + [out[-1]] * n)[:n] if out else []
    for x in out:
        if not 0.0 <= x <= 1.0:
            raise ValueError(f'{name} values must be in [0, 1], got {p!r}.')
    return out


def value_range(
    r: Sequence[float], name: str, positive=True
) -> Tuple[float, float]:
    """``(low, high)`` with ``low <= high`` (and ``0 < low`` if
    ``positive``), with a clear error."""
    lo, hi = (float(x) for x in r)
    if lo > hi or (positive and lo <= 0):
        raise ValueError(
            f'{name} must be (low, high) with 0 < low <= high, got {r!r}.'
        )
    return lo, hi
