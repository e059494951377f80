"""Colour jitter and grayscale of a crop as one 3x4 affine colour map.

Brightness, contrast, saturation and hue (in a random order, as
torchvision's ``ColorJitter``) and then an optional grayscale are all
affine in the colour, so :func:`random_color_matrix` composes them into
one matrix that the crop is multiplied by once (Chen et al. 2020, SimCLR,
https://arxiv.org/abs/2002.05709, App. A; Caron et al. 2021, DINO).
"""

import math
from typing import Optional, Sequence

import numpy as np

# ITU-R 601 luma weights (as PIL's ``convert('L')`` and torchvision).
LUMA_RGB = np.array([0.299, 0.587, 0.114])


def hue_rotation(theta: float) -> np.ndarray:
    """3x3 rotation by ``theta`` radians about the grey axis (1, 1, 1).

    Applied to an RGB column vector, ``theta = 2 * pi * h`` moves red
    towards green like an HSV hue shift of ``h`` turns.
    """
    c, s = math.cos(theta), math.sin(theta)
    k = np.full(3, 1.0 / math.sqrt(3.0))
    cross = np.array(
        [[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]]
    )
    return c * np.eye(3) + s * cross + (1.0 - c) * np.outer(k, k)


def random_color_matrix(
    mean: np.ndarray,
    jitter: Sequence[float],
    jitter_prob: float,
    gray_prob: float,
    luma: np.ndarray,
    perm: np.ndarray,
) -> Optional[np.ndarray]:
    """A random 3x4 affine colour map (jitter then grayscale), or None.

    Args:
        mean (np.ndarray): (3,) mean colour of the crop, input order.
        jitter (Sequence[float]): (brightness, contrast, saturation, hue).
        jitter_prob (float): Probability of the jitter.
        gray_prob (float): Probability of the grayscale.
        luma (np.ndarray): (3,) luma weights in input channel order.
        perm (np.ndarray): (3, 3) permutation, ``rgb = perm @ input``.
    """
    do_jitter = np.random.rand() < jitter_prob
    do_gray = np.random.rand() < gray_prob
    if not (do_jitter or do_gray):
        return None
    A = np.eye(3)
    b = np.zeros(3)
    luma = luma
    gray_proj = np.tile(luma, (3, 1))  # (3, 3): each row -> luma
    if do_jitter:
        bri, con, sat, hue = jitter
        for op in np.random.permutation(4):
            if op == 0 and bri > 0:
                f = np.random.uniform(max(0.0, 1 - bri), 1 + bri)
                A, b = f * A, f * b
            elif op == 1 and con > 0:
                f = np.random.uniform(max(0.0, 1 - con), 1 + con)
                # blend with the mean grey of the current image
                m = float(luma @ (A @ mean + b))
                A, b = f * A, f * b + (1 - f) * m
            elif op == 2 and sat > 0:
                f = np.random.uniform(max(0.0, 1 - sat), 1 + sat)
                M = f * np.eye(3) + (1 - f) * gray_proj
                A, b = M @ A, M @ b
            elif op == 3 and hue > 0:
                h = np.random.uniform(-hue, hue)
                R = perm.T @ hue_rotation(2 * math.pi * h) @ perm
                A, b = R @ A, R @ b
    if do_gray:
        A, b = gray_proj @ A, gray_proj @ b
    return np.concatenate([A, b[:, None]], axis=1)
