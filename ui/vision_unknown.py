"""Does a picture look like anything the digit model learned from?

The model's own output cannot say: uniform noise is read as a digit at 99.8 % (median top probability of
30 noise pictures, bench/bench_vision_unknown.py), and no threshold on the top probability, the entropy,
the largest logit or the energy that keeps 98 % of held-out digits flags any of them. The pictures
themselves can: a training digit is described well by the first 30 principal components of the training
digits, noise, smileys and shapes are not. The rule: the share of a picture's deviation from the mean
training digit that those 30 components leave unexplained; above the 98th percentile of the held-out
digits (0.23 on the bundled split) the page says the picture does not look like a digit. Measured: 2 %
of held-out digits flagged (by construction), 100 % of 30 noise pictures (median 0.77), 30 smileys (0.71)
and 30 shapes (0.58).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from transformer.vision.digits import load_digits_splits

COMPONENTS = 30
KEEP_DIGITS = 98  # percentile of held-out digits' residuals used as the threshold


@dataclass(frozen=True)
class DigitSpace:
    """The training digits' mean and first principal components, and the threshold on the residual."""

    mean: np.ndarray  # (D,)
    basis: np.ndarray  # (COMPONENTS, D), orthonormal rows
    threshold: float
    shape: tuple[int, ...]  # (C, H, W) of the pictures it describes

    def residual(self, images: np.ndarray) -> np.ndarray:
        """(N,) the share of each picture's deviation from the mean that the components leave unexplained."""
        x = images.reshape(len(images), -1).astype(np.float64) - self.mean
        rest = x - (x @ self.basis.T) @ self.basis
        return np.linalg.norm(rest, axis=1) / np.maximum(np.linalg.norm(x, axis=1), 1e-9)


def fit_digit_space(train: np.ndarray, held_out: np.ndarray) -> DigitSpace:
    """PCA of ``train`` (N, C, H, W); the threshold is the KEEP_DIGITS percentile over ``held_out``."""
    flat = train.reshape(len(train), -1).astype(np.float64)
    mean = flat.mean(0)
    _, _, vt = np.linalg.svd(flat - mean, full_matrices=False)
    space = DigitSpace(mean, vt[:COMPONENTS], 0.0, tuple(train.shape[1:]))
    threshold = float(np.percentile(space.residual(held_out), KEEP_DIGITS))
    return DigitSpace(space.mean, space.basis, threshold, space.shape)


@st.cache_resource(show_spinner=False)
def digit_space() -> DigitSpace:
    """The bundled digits' space (fitted once per server: about 0.1 s)."""
    splits = load_digits_splits()
    return fit_digit_space(splits.train[0], splits.test[0])


def unknown_share(image: np.ndarray) -> tuple[float, float] | None:
    """(residual, threshold) when ``image`` (C, H, W) has the digits' shape and its residual is above the
    threshold (it does not look like a digit); None when it looks like one or is not digit-shaped."""
    space = digit_space()
    if tuple(image.shape) != space.shape:
        return None
    residual = float(space.residual(image[None])[0])
    return (residual, space.threshold) if residual > space.threshold else None
