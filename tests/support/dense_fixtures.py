"""Tiny dense-probe fixtures in the ADE20K and depth folder layouts."""

import cv2
import numpy as np

COLOURS = {1: (0, 0, 200), 2: (200, 0, 0)}  # BGR red = class 1, blue = 2


def write_ade(root, n_train=6, n_val=3, size=(16, 16), seed=0):
    """ADE20K layout; left / right halves (patch-aligned) of two classes
    whose colour gives the class; a 0 (unlabeled) corner."""
    rng = np.random.default_rng(seed)
    h, w = size
    for split, n in (('training', n_train), ('validation', n_val)):
        (root / 'images' / split).mkdir(parents=True)
        (root / 'annotations' / split).mkdir(parents=True)
        for i in range(n):
            left = int(rng.integers(1, 3))
            mask = np.full((h, w), 3 - left, np.uint8)
            mask[:, : w // 2] = left
            mask[:2, :2] = 0
            img = np.zeros((h, w, 3), np.uint8)
            for cls, colour in COLOURS.items():
                img[mask == cls] = colour
            img[mask == 0] = COLOURS[left]
            cv2.imwrite(str(root / 'images' / split / f'{i}.png'), img)
            cv2.imwrite(str(root / 'annotations' / split / f'{i}.png'), mask)
    return str(root)


def write_depth_folder(root, n_train=6, n_val=3, seed=0):
    """images/ + depth/: bright left half at 2 m, dark right at 5 m."""
    rng = np.random.default_rng(seed)
    for split, n in (('training', n_train), ('validation', n_val)):
        (root / 'images' / split).mkdir(parents=True)
        (root / 'depth' / split).mkdir(parents=True)
        for i in range(n):
            img = np.full((16, 16, 3), 40, np.uint8)
            depth = np.full((16, 16), 5000, np.uint16)
            cut = int(rng.integers(1, 4)) * 4
            img[:, :cut] = 220
            depth[:, :cut] = 2000
            depth[0, 0] = 0  # no measurement
            cv2.imwrite(str(root / 'images' / split / f'{i}.png'), img)
            cv2.imwrite(str(root / 'depth' / split / f'{i}.png'), depth)
    return str(root)
