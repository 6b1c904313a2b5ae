"""Digits written with a pen: the common ways of writing each digit as strokes, drawn for training.

scikit-learn's digits come from 43 writers, and many everyday ways of writing a digit are rare or
missing there (a 4 closed at the top, a 7 with a bar, a 1 with a flag and a base, a 9 with a
straight stem, a 2 with a loop). Here each digit has several written forms (allographs), each a few
strokes in a unit box (x to the right, y down, both in [0, 1]). :func:`written` jitters the points,
picks a pen width and draws them as bright ink on black at ``WORK_SIDE``; the styles of
:mod:`digit_styles` (another hand, thickness, page, photograph) then apply as to any digit.

These forms are ours, written from how people write digits, not traced from any collection; the
bench's drawn digits (bench/bench_drawn_digits.py) are other strokes of our own.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from .digit_styles import WORK_SIDE, StyleMix, styled

Stroke = list[tuple[float, float]]


def arc(cx: float, cy: float, rx: float, ry: float, start: float, end: float, n: int = 20) -> Stroke:
    """Points on an ellipse from angle ``start`` to ``end`` (degrees; 0 = right, 90 = down)."""
    angles = np.deg2rad(np.linspace(start, end, n))
    return [(cx + rx * np.cos(a), cy + ry * np.sin(a)) for a in angles]


ALLOGRAPHS: dict[int, list[list[Stroke]]] = {
    0: [
        [arc(0.5, 0.5, 0.32, 0.46, -90, 270)],
        [arc(0.5, 0.5, 0.38, 0.46, -100, 280, 24)],  # the pen runs on past the start
    ],
    1: [
        [[(0.5, 0.02), (0.5, 0.98)]],
        [[(0.3, 0.25), (0.58, 0.02), (0.55, 0.98)]],  # with a flag
        [[(0.3, 0.22), (0.55, 0.02), (0.55, 0.96)], [(0.3, 0.97), (0.8, 0.97)]],  # flag and base
    ],
    2: [
        [arc(0.5, 0.3, 0.32, 0.27, 190, 360) + [(0.78, 0.42), (0.15, 0.97), (0.88, 0.96)]],
        [
            arc(0.5, 0.3, 0.32, 0.27, 190, 360)
            + [(0.7, 0.55), (0.25, 0.9)]
            + arc(0.32, 0.88, 0.1, 0.08, 180, 450, 10)
            + [(0.88, 0.95)]
        ],  # a loop at the foot
        [arc(0.48, 0.32, 0.34, 0.3, 200, 380) + [(0.2, 0.96), (0.9, 0.97)]],  # a curved neck
        [arc(0.45, 0.28, 0.3, 0.25, 200, 370) + [(0.62, 0.55), (0.12, 0.95), (0.55, 0.9)]],  # a short foot
    ],
    3: [
        [arc(0.47, 0.27, 0.3, 0.24, 200, 450), arc(0.47, 0.73, 0.33, 0.25, -90, 160)],
        [[(0.18, 0.04), (0.8, 0.04), (0.42, 0.45)] + arc(0.47, 0.7, 0.33, 0.26, -100, 160)],  # flat top
    ],
    4: [
        [[(0.6, 0.02), (0.12, 0.66), (0.92, 0.66)], [(0.7, 0.3), (0.7, 0.99)]],  # closed, printed
        [[(0.22, 0.02), (0.18, 0.58), (0.88, 0.58)], [(0.72, 0.04), (0.72, 0.99)]],  # open top
        [[(0.25, 0.05), (0.15, 0.55), (0.8, 0.52), (0.82, 0.05)], [(0.8, 0.3), (0.78, 0.99)]],  # nearly closed
    ],
    5: [
        [[(0.82, 0.04), (0.3, 0.04), (0.25, 0.44)] + arc(0.47, 0.68, 0.33, 0.28, -130, 150)],
        [[(0.3, 0.04), (0.25, 0.44)] + arc(0.47, 0.68, 0.33, 0.28, -130, 150), [(0.3, 0.04), (0.85, 0.05)]],
        [
            [(0.28, 0.06), (0.22, 0.42)] + arc(0.5, 0.66, 0.3, 0.28, -140, 200),
            [(0.28, 0.06), (0.7, 0.02)],
        ],  # belly curled in
    ],
    6: [
        [[(0.72, 0.02), (0.38, 0.3), (0.2, 0.65)] + arc(0.5, 0.72, 0.3, 0.25, 180, 530)],
        [arc(0.9, 0.62, 0.72, 0.6, 250, 180, 12) + arc(0.48, 0.72, 0.3, 0.24, 180, 520)],  # a rounder back
        [[(0.78, 0.02), (0.25, 0.72)] + arc(0.45, 0.78, 0.22, 0.18, 180, 530)],  # a straight back, a small loop
    ],
    7: [
        [[(0.12, 0.05), (0.88, 0.05), (0.4, 0.98)]],
        [[(0.12, 0.05), (0.88, 0.05), (0.42, 0.98)], [(0.35, 0.5), (0.82, 0.5)]],  # with a bar
        [[(0.12, 0.18), (0.15, 0.05), (0.85, 0.06), (0.62, 0.5), (0.55, 0.98)]],  # a hook, a steep stem
    ],
    8: [
        [arc(0.5, 0.26, 0.26, 0.23, 0, 360), arc(0.5, 0.72, 0.31, 0.26, 0, 360)],
        [arc(0.5, 0.26, 0.27, 0.23, 90, -210, 16) + arc(0.5, 0.72, 0.3, 0.25, -90, 270, 24) + [(0.75, 0.15)]],
    ],
    9: [
        [arc(0.47, 0.3, 0.3, 0.27, 0, 360), [(0.77, 0.3), (0.74, 0.99)]],  # straight stem
        [arc(0.47, 0.3, 0.3, 0.27, 0, 360), [(0.77, 0.3), (0.72, 0.8), (0.45, 0.99)]],  # curved tail
        [arc(0.5, 0.3, 0.3, 0.27, 10, 370) + [(0.75, 0.8), (0.62, 0.99)]],  # one stroke
    ],
}


def written(digit: int, form: int, rng: np.random.Generator, side: int = WORK_SIDE) -> np.ndarray:
    """One written form of ``digit`` -> (side, side) bright ink on black in [0, 1]: every stroke moved
    by up to 4 % of the box and each of its points by up to 1.2 % more, the digit's box 60-85 % of the side high and 40-80 % wide, the pen 2-7 %
    of the side wide with round ends."""
    height, width = rng.uniform(0.6, 0.85), rng.uniform(0.4, 0.8)
    top, left = (1 - height) / 2, (1 - width) / 2
    pen = max(1, round(side * rng.uniform(0.02, 0.07)))
    canvas = Image.new("L", (side, side), 0)
    draw = ImageDraw.Draw(canvas)
    for stroke in ALLOGRAPHS[digit][form]:
        points = np.asarray(stroke) + rng.uniform(-0.04, 0.04, 2) + rng.uniform(-0.012, 0.012, (len(stroke), 2))
        xy = [((left + x * width) * side, (top + y * height) * side) for x, y in points]
        draw.line(xy, fill=255, width=pen, joint="curve")
        for x, y in (xy[0], xy[-1]):
            draw.ellipse([x - pen / 2, y - pen / 2, x + pen / 2, y + pen / 2], fill=255)
    return np.asarray(canvas, dtype=np.float32) / 255


def forms() -> list[tuple[int, int]]:
    """Every (digit, form) pair, digit by digit."""
    return [(digit, form) for digit in range(10) for form in range(len(ALLOGRAPHS[digit]))]


def stroke_digits(renders: int, rng: np.random.Generator, mix: StyleMix = StyleMix()) -> tuple[np.ndarray, np.ndarray]:
    """``renders`` random styles of every written form of every digit -> images (N, 1, 32, 32) float32,
    framed as uploads are, and labels (N,) int64 (N = renders × the number of forms)."""
    pairs = [pair for pair in forms() for _ in range(renders)]
    if not pairs:
        return np.zeros((0, 1, 32, 32), dtype=np.float32), np.zeros(0, dtype=np.int64)
    images = np.stack([styled(written(digit, form, rng), rng, mix) for digit, form in pairs]).astype(np.float32)
    return images, np.asarray([digit for digit, _ in pairs], dtype=np.int64)
