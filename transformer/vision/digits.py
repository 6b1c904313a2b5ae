"""scikit-learn's handwritten digits (1,797 images, 8×8, shipped inside the wheel), upsampled to 32×32.

The split is seeded and stratified: 60 % train, 20 % validation, 20 % test.

The app reads the images straight from the wheel's data file and the seed-0 split from
``digits_split.json`` (written once by :func:`split_indices`): importing scikit-learn itself would add
about 150 MB to every server process for two function calls.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

IMAGE_SIZE = 32
LABELS = tuple(str(d) for d in range(10))


@dataclass(frozen=True)
class DigitSplits:
    """Images (N, 1, 32, 32) float32 in [0, 1] and labels (N,) int64 per split."""

    train: tuple[np.ndarray, np.ndarray]
    val: tuple[np.ndarray, np.ndarray]
    test: tuple[np.ndarray, np.ndarray]


def upsample(images8: np.ndarray, size: int = IMAGE_SIZE) -> np.ndarray:
    """(N, 8, 8) values 0..16 -> (N, 1, size, size) float32 in [0, 1] (bilinear)."""
    x = torch.from_numpy(np.asarray(images8, dtype=np.float32) / 16.0).unsqueeze(1)
    x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    return x.clamp(0, 1).numpy()


SPLIT_FILE = Path(__file__).with_name("digits_split.json")


def read_digits() -> tuple[np.ndarray, np.ndarray]:
    """(images (1797, 8, 8) float64 ink counts 0..16, labels (1797,) int64) from the ``digits.csv.gz``
    that scikit-learn's wheel ships (found without importing scikit-learn; the same numbers as its
    ``load_digits``)."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("scikit-learn is not installed: its wheel holds the digits (pip install scikit-learn)")
    with gzip.open(Path(spec.origin).parent / "datasets" / "data" / "digits.csv.gz", "rt") as f:
        data = np.loadtxt(f, delimiter=",")
    return data[:, :-1].reshape(-1, 8, 8), data[:, -1].astype(np.int64)


def split_indices(labels: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """{"train", "val", "test"}: scikit-learn's seeded stratified split of the digit indices."""
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(labels))
    rest, test = train_test_split(idx, test_size=0.2, random_state=seed, stratify=labels)
    train, val = train_test_split(rest, test_size=0.25, random_state=seed, stratify=labels[rest])
    return {"train": train, "val": val, "test": test}


def stored_split(seed: int) -> dict[str, np.ndarray] | None:
    """The split kept in ``digits_split.json`` for ``seed`` (None when that seed is not kept)."""
    kept = json.loads(SPLIT_FILE.read_text(encoding="utf-8")) if SPLIT_FILE.exists() else {}
    if kept.get("seed") != seed:
        return None
    return {name: np.asarray(kept[name], dtype=np.int64) for name in ("train", "val", "test")}


def load_digits_splits(seed: int = 0) -> DigitSplits:
    """The seeded stratified split of the upsampled digits."""
    images8, labels = read_digits()
    images = upsample(images8)
    split = stored_split(seed) or split_indices(labels, seed)
    pick = lambda ids: (images[ids], labels[ids])  # noqa: E731
    return DigitSplits(pick(split["train"]), pick(split["val"]), pick(split["test"]))


def augment(
    images: torch.Tensor, generator: torch.Generator, shift: float = 3.0, degrees: float = 12.0, zoom: float = 0.1
) -> torch.Tensor:
    """Random small affine warps of (B, C, H, W): shift up to ``shift`` pixels, rotate up to
    ``degrees``, scale by 1 ± ``zoom``; the same handwriting, placed a little differently."""
    b, _, h, _ = images.shape
    rand = lambda: torch.rand(b, generator=generator) * 2 - 1  # noqa: E731
    angle = rand() * degrees * torch.pi / 180
    scale = 1 + rand() * zoom
    tx, ty = rand() * shift * 2 / h, rand() * shift * 2 / h
    cos, sin = torch.cos(angle) / scale, torch.sin(angle) / scale
    theta = torch.stack([torch.stack([cos, -sin, tx], 1), torch.stack([sin, cos, ty], 1)], 1)  # (B, 2, 3)
    grid = F.affine_grid(theta, list(images.shape), align_corners=False)
    return F.grid_sample(images, grid, align_corners=False, padding_mode="zeros")


GRID = 8  # the dataset's images are 8 × 8 counts of ink in 4 × 4 blocks of a 32 × 32 bitmap
BLOCK = 4
INK_SHARE = 0.2  # a pixel is ink when above this share of the brightest pixel
WHOLE_FRAME_HEIGHT = 0.85  # ink over this share of a picture's height (every dataset digit spans all 8 rows)
LARGE_SIDE = 96  # pictures at least this large have strokes several pixels wide


def dataset_frame(pixels: np.ndarray, size: int = IMAGE_SIZE) -> tuple[np.ndarray, list[str]]:
    """A picture of one digit (H, W) or (H, W, C) grey values in [0, 1] -> (1, size, size) framed
    as the training digits are, and the notes of what was done ("inverted", "cropped").

    Every digit of the dataset spans the full height of its 8 × 8 frame, centred across it. So a
    bright background is inverted, the ink's bounding box is scaled (aspect kept) to the frame's
    height at 4 pixels per cell, placed on whole cells in the middle, averaged over 4 × 4 blocks
    into 8 × 8 (how the dataset was made), stretched to the dataset's range and upsampled as in
    training (:func:`upsample`). A dataset image saved at any size, with either ink colour, comes
    back as it was."""
    grey = np.asarray(pixels, dtype=np.float32)
    grey = grey.mean(axis=2) if grey.ndim == 3 else grey
    notes = []
    if grey.mean() > 0.5:  # dark ink on paper: even out the light (not on flat cells), make the ink bright
        grey, notes = 1.0 - (grey if _flat_cells(torch.from_numpy(grey)) else _even_light(grey)), ["inverted"]
    # paper in a photo is never one flat grey: its level (the darkest quarter) counts as no ink
    grey = np.clip(grey - float(np.percentile(grey, 25)), 0.0, None)
    top = float(grey.max())
    if top <= 0:
        return upsample(np.zeros((1, GRID, GRID)), size)[0], notes
    rows, cols = _ink_places(grey, top)
    if _whole_frame(grey.shape, rows, cols):  # already framed like the dataset: keep the frame
        return _reframe(torch.from_numpy(np.ascontiguousarray(grey)), size), notes
    box = grey[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1]
    notes.append("cropped")
    side = GRID * BLOCK
    scale = side / max(box.shape)
    height, width = (max(1, min(side, round(n * scale))) for n in box.shape)
    x = _average(torch.from_numpy(np.ascontiguousarray(box)), height, width)
    canvas = torch.zeros(side, side)
    top_px = BLOCK * round((side - height) / 2 / BLOCK)
    left_px = BLOCK * round((side - width) / 2 / BLOCK)
    canvas[top_px : top_px + height, left_px : left_px + width] = x.clamp(min=0)
    cells = canvas.reshape(GRID, BLOCK, GRID, BLOCK).mean(dim=(1, 3))  # (8, 8)
    cells = cells / cells.max().clamp(min=1e-6) * 16.0  # the dataset's counts run 0..16
    return upsample(cells[None].numpy(), size)[0], notes


def _ink_places(grey: np.ndarray, top: float) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of the ink pixels (above INK_SHARE of ``top``). On a large picture (side
    >= LARGE_SIDE) an ink pixel with fewer than 3 ink neighbours is a speck of noise, not part of
    a stroke, and does not count (a photo's grain would otherwise stretch the crop to the page)."""
    ink = grey > INK_SHARE * top
    if min(grey.shape) >= LARGE_SIDE:
        count = F.avg_pool2d(torch.from_numpy(ink.astype(np.float32))[None, None], 3, stride=1, padding=1)
        kept = ink & (count[0, 0].numpy() * 9 >= 4)
        ink = kept if kept.any() else ink
    return np.where(ink)


def _whole_frame(shape: tuple[int, int], rows: np.ndarray, cols: np.ndarray) -> bool:
    """Whether the ink fills the picture as a dataset digit fills its frame: a square-ish
    picture, ink over at least WHOLE_FRAME_HEIGHT of its height, centred across it within one cell."""
    h, w = shape
    centre = (cols.min() + cols.max()) / 2
    return (
        0.8 <= w / h <= 1.25
        and rows.max() - rows.min() + 1 >= WHOLE_FRAME_HEIGHT * h
        and abs(centre - (w - 1) / 2) <= w / GRID
    )


def _average(image: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """(H, W) -> (height, width): the mean over each target pixel's area when shrinking (exact
    4 × 4 block means for a picture 4× the size), bilinear with antialiasing otherwise."""
    x = image.float()[None, None]
    if image.shape[0] >= height and image.shape[1] >= width:
        return F.adaptive_avg_pool2d(x, (height, width))[0, 0]
    return F.interpolate(x, size=(height, width), mode="bilinear", antialias=True, align_corners=False)[0, 0]


def _reframe(grey: torch.Tensor, size: int) -> np.ndarray:
    """A whole-frame picture -> (1, size, size). One made of 8 × 8 flat cells (a dataset image
    enlarged without smoothing: its values change at no more than 7 columns and 7 rows) is read
    back as the value at each cell's centre and upsampled as in training; a smooth one (enlarged
    with interpolation, or a photo) is averaged straight to ``size``."""
    h, w = grey.shape
    if _flat_cells(grey):
        centres = lambda n: ((torch.arange(GRID) + 0.5) * n / GRID).long().clamp(max=n - 1)  # noqa: E731
        cells = grey[centres(h)][:, centres(w)].float()
        if cells.max() > 0:
            return upsample((cells / cells.max() * 16.0)[None].numpy(), size)[0]
    direct = _average(grey, size, size)
    return (direct / direct.max()).clamp(0, 1)[None].numpy()


def _even_light(page: np.ndarray) -> np.ndarray:
    """(H, W) a light page with dark ink -> the page divided by its own light: the brightest
    value around each place (max over a 7 × 7 neighbourhood of a 16 × 16 average, wider than any
    stroke), so a photo's shading and shadows become white paper. An evenly lit page (light
    varying by less than 15 %) is returned as it is."""
    x = torch.from_numpy(np.ascontiguousarray(page, dtype=np.float32))[None, None]
    coarse = F.adaptive_avg_pool2d(x, (16, 16)) if min(page.shape) >= 16 else x
    light = F.max_pool2d(coarse, 7, stride=1, padding=3)
    if float(light.min()) > 0.85 * float(light.max()):
        return page
    light = F.interpolate(light, size=page.shape, mode="bilinear", align_corners=False)
    return (x / light.clamp(min=1e-3)).clamp(0, 1)[0, 0].numpy()


def _flat_cells(grey: torch.Tensor) -> bool:
    """Whether (H, W) is made of at most 8 × 8 flat cells (an 8 × 8 picture enlarged without
    smoothing): its values change at fewer than 8 columns and 8 rows, each within a pixel of the
    edge between two cells. (A thin straight stroke also changes at few places, but not there.)"""

    def on_cell_edges(d: torch.Tensor, n: int) -> bool:
        after = torch.nonzero((d.abs() > 0.02).any(dim=0)).flatten() + 1  # first index past each change
        edges = torch.arange(1, GRID) * n / GRID
        return len(after) < GRID and bool(((after[:, None] - edges[None]).abs() <= 1).any(dim=1).all())

    return on_cell_edges(grey.diff(dim=1), grey.shape[1]) and on_cell_edges(grey.diff(dim=0).T, grey.shape[0])
