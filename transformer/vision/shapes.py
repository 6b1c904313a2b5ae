"""Scenes of simple shapes (circle, square, triangle) on a coloured background, with exact masks.

Every pixel whose centre lies inside a shape gets the shape's class in the mask and the shape's
colour in the image (before noise), so image and mask agree exactly. Shapes do not overlap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LABELS = ("background", "circle", "square", "triangle")
SHAPES = LABELS[1:]
IMAGE_SIZE = 32
# half sizes in pixels (radius, half side, half base): similar areas, none too small to tell apart
SIZES = {"circle": (4.0, 7.5), "square": (3.5, 7.0), "triangle": (4.5, 9.0)}


@dataclass(frozen=True)
class Shape:
    """One drawn shape: kind (``"circle"``, ``"square"``, ``"triangle"``), centre (row, col) in
    pixels, size (circle radius; square half side; triangle half base), colour RGB in [0, 1]."""

    kind: str
    center: tuple[float, float]
    size: float
    color: tuple[float, float, float]


@dataclass(frozen=True)
class Scene:
    """image (3, H, W) float32 in [0, 1]; mask (H, W) int64 class ids (0 background);
    objects (H, W) int64: 0 background, i + 1 for shapes[i]."""

    image: np.ndarray
    mask: np.ndarray
    objects: np.ndarray
    shapes: tuple[Shape, ...]


def inside(shape: Shape, size: int = IMAGE_SIZE) -> np.ndarray:
    """(size, size) bool: which pixel centres lie inside ``shape``."""
    rows, cols = np.mgrid[0:size, 0:size] + 0.5
    r, c = shape.center
    if shape.kind == "circle":
        return (rows - r) ** 2 + (cols - c) ** 2 <= shape.size**2
    if shape.kind == "square":
        return (np.abs(rows - r) <= shape.size) & (np.abs(cols - c) <= shape.size)
    if shape.kind == "triangle":  # apex up, base at the bottom, height = base
        h = 2 * shape.size
        top = r - shape.size
        depth = rows - top  # 0 at the apex, h at the base
        return (depth >= 0) & (depth <= h) & (np.abs(cols - c) <= depth / 2)
    raise ValueError(f"Unknown shape kind {shape.kind!r}; use one of {', '.join(SHAPES)}.")


def _color(rng: np.random.Generator, away_from: np.ndarray | None) -> np.ndarray:
    for _ in range(50):
        color = rng.uniform(0, 1, 3)
        if away_from is None or np.abs(color - away_from).sum() > 0.8:
            return color
    return 1 - away_from


@dataclass(frozen=True)
class Conditions:
    """How scenes are drawn: objects per scene (inclusive range), each shape's half size as a
    share of its :data:`SIZES` range (0: its low end, 1: its high end; below 0 smaller than the
    first training range, down to a few pixels), pixel noise std (range, drawn per scene)."""

    objects: tuple[int, int] = (1, 3)
    size: tuple[float, float] = (0.0, 1.0)
    noise: tuple[float, float] = (0.05, 0.05)


# the conditions the segmenter is measured in (metrics.json "test_by_condition"), and the wide
# range it is trained on: from 2-pixel shapes to the first range's largest, noise up to 0.2, 1 to 6 objects
SMALL_OBJECTS = "small objects (about 2-7 px across)"
CONDITIONS = {
    "default (1-3 objects, first size range, noise 0.05)": Conditions(),
    SMALL_OBJECTS: Conditions(size=(-0.8, -0.1)),
    "noise 0.2": Conditions(noise=(0.2, 0.2)),
    "4-6 objects": Conditions(objects=(4, 6)),
}
WIDE = Conditions(objects=(1, 6), size=(-0.8, 1.0), noise=(0.0, 0.2))


def random_shape(
    rng: np.random.Generator, kind: str, background: np.ndarray, size: int = IMAGE_SIZE, scale=(0.0, 1.0)
) -> Shape:
    """A shape of ``kind`` with random size (``scale``: see :class:`Conditions`), place and a colour
    unlike the background."""
    low, high = SIZES[kind]
    half = float(low + (high - low) * rng.uniform(*scale))
    r, c = rng.uniform(half, size - half, 2)
    return Shape(kind, (float(r), float(c)), half, tuple(float(v) for v in _color(rng, background)))


def draw_scene(
    shapes: list[Shape], background, noise: float, rng: np.random.Generator, size: int = IMAGE_SIZE
) -> Scene:
    """Paint ``shapes`` on ``background`` (RGB) and add Gaussian noise of std ``noise``."""
    image = np.empty((3, size, size), dtype=np.float32)
    image[:] = np.asarray(background, dtype=np.float32).reshape(3, 1, 1)
    mask = np.zeros((size, size), dtype=np.int64)
    objects = np.zeros((size, size), dtype=np.int64)
    for i, shape in enumerate(shapes):
        where = inside(shape, size)
        image[:, where] = np.asarray(shape.color, dtype=np.float32)[:, None]
        mask[where] = LABELS.index(shape.kind)
        objects[where] = i + 1
    image = np.clip(image + rng.normal(0, noise, image.shape).astype(np.float32), 0, 1)
    return Scene(image, mask, objects, tuple(shapes))


def random_scene(
    rng: np.random.Generator, kinds: list[str] | None = None, noise: float = 0.05, conditions: Conditions | None = None
) -> Scene:
    """A scene of ``kinds`` (default: 1 to 3 random shapes), placed without overlap (a 1-pixel gap).
    ``conditions`` (when given) sets the number of shapes, their sizes and the noise instead."""
    if conditions is not None:
        noise = float(rng.uniform(*conditions.noise))
    if kinds is None:
        low, high = conditions.objects if conditions is not None else (1, 3)
        kinds = list(rng.choice(SHAPES, size=int(rng.integers(low, high + 1))))
    scale = conditions.size if conditions is not None else (0.0, 1.0)
    background = rng.uniform(0, 1, 3)
    placed: list[Shape] = []
    taken = np.zeros((IMAGE_SIZE, IMAGE_SIZE), dtype=bool)
    for kind in kinds:
        for _ in range(100):
            shape = random_shape(rng, kind, background, scale=scale)
            where = inside(shape)
            if not (_grow(where) & taken).any():
                placed.append(shape)
                taken |= where
                break
    return draw_scene(placed, background, noise, rng)


def _grow(where: np.ndarray) -> np.ndarray:
    out = where.copy()
    out[1:] |= where[:-1]
    out[:-1] |= where[1:]
    out[:, 1:] |= where[:, :-1]
    out[:, :-1] |= where[:, 1:]
    return out


def scene_batch(
    rng: np.random.Generator, n: int, conditions: Conditions | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n random scenes: images (n, 3, 32, 32) float32, masks (n, 32, 32) int64, objects (n, 32, 32) int64."""
    scenes = [random_scene(rng, conditions=conditions) for _ in range(n)]
    return (
        np.stack([s.image for s in scenes]),
        np.stack([s.mask for s in scenes]),
        np.stack([s.objects for s in scenes]),
    )
