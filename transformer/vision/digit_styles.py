"""Digits drawn the ways people make them, for training the digit model beyond scikit-learn's scans.

Each style starts from a high-resolution picture of bright ink on black (H, W) in [0, 1], either a
training digit enlarged from 8 × 8 or a digit rendered in a font, and ends as the model reads it:
through :func:`transformer.vision.digits.dataset_frame`, the framing every upload goes through
(crop to the ink, scale to the frame's height, 4 × 4 block averages, upsample). So the model is
trained on what the upload path makes of a thick stroke, a font, a small off-centre digit or a
photograph, not on the raw picture.

Kept out of training, so ``bench/bench_digits_styles.py`` measures on them unseen:
- the fonts of :data:`HELD_OUT_FONT_FAMILIES` (Liberation Sans, Serif, Mono and Sans Narrow);
- strokes thicker than a max filter of :data:`THICKEST` pixels at 64 px (the bench's "very thick"
  is 17 at 128 px, i.e. 9 at 64);
- the bench's photo (light falling off in a straight line, JPEG compression): training photos
  have light falling off around a random spot, blur and noise, and are never JPEG-compressed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image, ImageDraw, ImageFont

from .digits import dataset_frame

WORK_SIDE = 64  # side of the high-resolution pictures the styles are drawn at
THICKEST = 7  # largest max-filter size (pixels at WORK_SIDE) used to thicken strokes in training
FONT_DIRS = (
    Path("/usr/share/fonts/truetype/dejavu"),
    Path("/usr/share/fonts/truetype/liberation"),
    Path("/usr/share/fonts/opentype/noto"),
)
HELD_OUT_FONT_FAMILIES = ("Liberation",)
# faces inside a .ttc collection with their own digit shapes (the regional faces share them)
COLLECTION_FACES = {"NotoSansCJK": (0, 5), "NotoSerifCJK": (0,)}


@dataclass(frozen=True)
class FontFace:
    """One font face: a file and the face's index inside it (0 for a plain .ttf)."""

    path: Path
    index: int = 0

    @property
    def name(self) -> str:
        return self.path.stem + (f"#{self.index}" if self.index else "")


def font_faces(held_out: bool = False, dirs: tuple[Path, ...] = FONT_DIRS) -> list[FontFace]:
    """The font faces installed here for training (``held_out`` False) or kept out of it (True).
    Maths fonts are skipped (their digits are the text fonts' digits)."""
    faces = []
    for path in sorted(p for d in dirs if d.is_dir() for p in d.iterdir() if p.suffix in (".ttf", ".otf", ".ttc")):
        if "Math" in path.name or path.name.startswith(HELD_OUT_FONT_FAMILIES) != held_out:
            continue
        prefix = next((k for k in COLLECTION_FACES if path.name.startswith(k)), None)
        faces += [FontFace(path, i) for i in COLLECTION_FACES[prefix]] if prefix else [FontFace(path)]
    return faces


def change_thickness(ink: torch.Tensor, size: int) -> torch.Tensor:
    """(B, 1, H, W) bright ink -> the same with strokes thickened (``size`` > 1: max filter of that
    odd size) or thinned (``size`` < -1: min filter of ``-size``); ``size`` in (-1, 0, 1) changes nothing."""
    if abs(size) <= 1:
        return ink
    k = abs(size)
    if size > 0:
        return F.max_pool2d(ink, k, stride=1, padding=k // 2)
    return -F.max_pool2d(-ink, k, stride=1, padding=k // 2)


def enlarge(image: np.ndarray, side: int = WORK_SIDE) -> np.ndarray:
    """(H, W) or (1, H, W) bright ink in [0, 1] (a dataset digit as trained on) -> (side, side), bilinear."""
    x = torch.from_numpy(np.asarray(image, dtype=np.float32).reshape(image.shape[-2:]))[None, None]
    return F.interpolate(x, size=(side, side), mode="bilinear", align_corners=False)[0, 0].clamp(0, 1).numpy()


def render(face: FontFace, digit: int, rng: np.random.Generator, side: int = WORK_SIDE) -> np.ndarray:
    """One digit in ``face`` -> (side, side) bright ink in [0, 1]: glyph height 55-85 % of the
    side, rotated by up to ±8 degrees, placed up to a tenth of the side off the middle."""
    canvas = Image.new("L", (side, side), 0)
    font = ImageFont.truetype(str(face.path), int(side * rng.uniform(0.55, 0.85)), index=face.index)
    dx, dy = rng.uniform(-0.1, 0.1, 2) * side
    ImageDraw.Draw(canvas).text((side / 2 + dx, side / 2 + dy), str(digit), fill=255, font=font, anchor="mm")
    canvas = canvas.rotate(float(rng.uniform(-8, 8)), resample=Image.BILINEAR)
    return np.asarray(canvas, dtype=np.float32) / 255


def on_page(ink: np.ndarray, rng: np.random.Generator, small: bool) -> np.ndarray:
    """(S, S) ink -> a (P, P) black page with it: ``small`` puts it at 20-45 % of a page 2-3× its
    side anywhere on it (off-centre); otherwise at full size with a margin of up to a quarter."""
    s = ink.shape[0]
    if small:
        page_side = int(s * rng.uniform(2, 3))
        digit_side = max(8, int(page_side * rng.uniform(0.2, 0.45)))
    else:
        page_side, digit_side = int(s * rng.uniform(1.0, 1.5)), s
    x = torch.from_numpy(ink)[None, None]
    x = F.interpolate(x, size=(digit_side, digit_side), mode="bilinear", antialias=True, align_corners=False)[0, 0]
    page = np.zeros((page_side, page_side), dtype=np.float32)
    top, left = (int(v) for v in rng.integers(0, page_side - digit_side + 1, 2))
    page[top : top + digit_side, left : left + digit_side] = x.numpy()
    return page


def photographed(ink: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(H, W) bright ink -> dark ink on paper as a camera sees it, values in [0, 1]: paper 0.6-1.0
    lit unevenly (falling off by up to 40 % around a random spot), the ink 50-90 % darker, the
    picture blurred (σ up to 1.5 px) and grainy (noise σ up to 0.05)."""
    h, w = ink.shape
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    cy, cx = rng.uniform(0, h), rng.uniform(0, w)
    distance = np.hypot(yy - cy, xx - cx) / np.hypot(h, w)
    light = rng.uniform(0.6, 1.0) * (1 - rng.uniform(0, 0.4) * distance)
    page = (light * (1 - rng.uniform(0.5, 0.9) * ink)).astype(np.float32)
    sigma = rng.uniform(0, 1.5)
    if sigma > 0.3:
        page = _blur(page, sigma)
    return np.clip(page + rng.normal(0, rng.uniform(0, 0.05), page.shape), 0, 1).astype(np.float32)


def _blur(page: np.ndarray, sigma: float) -> np.ndarray:
    """(H, W) -> the same Gaussian-blurred with ``sigma`` pixels (separable, edges replicated)."""
    radius = max(1, int(3 * sigma))
    taps = torch.exp(-0.5 * (torch.arange(-radius, radius + 1, dtype=torch.float32) / sigma) ** 2)
    taps = taps / taps.sum()
    x = F.pad(torch.from_numpy(page)[None, None], (radius,) * 4, mode="replicate")
    x = F.conv2d(x, taps.view(1, 1, 1, -1))
    return F.conv2d(x, taps.view(1, 1, -1, 1))[0, 0].numpy()


def another_hand(ink: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(S, S) bright ink -> the same digit as another writer might make it, (S, S) in [0, 1]:
    slanted (horizontal shear up to ±0.45 of the height, mostly to the right), turned by up to
    ±10 degrees, 0.7-1.35 times as wide, and bent by a smooth random displacement (an elastic
    distortion, Simard et al. 2003: white noise blurred with σ = S/10, scaled so that a pixel
    moves by up to S/16). Drawn shrunk by 0.8 so the slanted digit stays on the picture (the
    framing crops to the ink anyway)."""
    s = ink.shape[-1]
    slant = rng.uniform(-0.15, 0.45)  # x moves right as y goes up: most hands lean right
    angle = np.deg2rad(rng.uniform(-10, 10))
    width = rng.uniform(0.7, 1.35)
    cos, sin = np.cos(angle), np.sin(angle)
    # output (x, y) in [-1, 1] -> where to read the input: the inverse of widen·slant·turn, shrunk
    forward = (
        np.array([[width, 0.0], [0.0, 1.0]])
        @ np.array([[1.0, -slant], [0.0, 1.0]])
        @ np.array([[cos, -sin], [sin, cos]])
    )
    inverse = np.linalg.inv(0.8 * forward)
    theta = torch.zeros(1, 2, 3)
    theta[0, :, :2] = torch.from_numpy(inverse).float()
    grid = F.affine_grid(theta, [1, 1, s, s], align_corners=False)
    noise = torch.from_numpy(rng.standard_normal((2, s, s)).astype(np.float32))
    field = torch.from_numpy(np.stack([_blur(n.numpy(), s / 10) for n in noise]))
    field = field / field.abs().amax().clamp_min(1e-6) * rng.uniform(0, 2 / 16)  # up to s/16 px in [-1, 1] units
    grid = grid + field.permute(1, 2, 0)[None]
    x = torch.from_numpy(np.ascontiguousarray(ink, dtype=np.float32))[None, None]
    return F.grid_sample(x, grid, align_corners=False, padding_mode="zeros")[0, 0].clamp(0, 1).numpy()


@dataclass(frozen=True)
class StyleMix:
    """How often each style is drawn: thickness sizes to pick from (0 = unchanged), and the
    chances of a small off-centre digit, of dark ink on a light page, of a photographed page, and
    of the digit redrawn by another hand (:func:`another_hand`)."""

    thickness: tuple[int, ...] = (-3, 0, 0, 3, 5, THICKEST)
    small: float = 0.3
    dark_ink: float = 0.5
    photo: float = 0.3
    hand: float = 0.0


def styled(ink: np.ndarray, rng: np.random.Generator, mix: StyleMix = StyleMix()) -> np.ndarray:
    """(S, S) bright ink -> one random style of it, framed as the model reads uploads: (1, 32, 32)."""
    if mix.hand and rng.random() < mix.hand:
        ink = another_hand(ink, rng)
    size = int(rng.choice(mix.thickness))
    ink = change_thickness(torch.from_numpy(np.ascontiguousarray(ink))[None, None], size)[0, 0].numpy()
    page = on_page(ink, rng, small=rng.random() < mix.small)
    if rng.random() < mix.photo:
        page = photographed(page, rng)
    elif rng.random() < mix.dark_ink:
        page = 1.0 - page
    return dataset_frame(page)[0]


def styled_digits(
    images: np.ndarray, labels: np.ndarray, copies: int, rng: np.random.Generator, mix: StyleMix = StyleMix()
) -> tuple[np.ndarray, np.ndarray]:
    """``copies`` random styles of each digit, images (N, 1, H, W) or (N, H, W) in [0, 1] (the
    upsampled dataset digits) -> images (N·copies, 1, 32, 32) float32 in [0, 1] and labels (N·copies,) int64."""
    out = [styled(enlarge(im), rng, mix) for im in images for _ in range(copies)]
    return np.stack(out).astype(np.float32), np.repeat(np.asarray(labels, dtype=np.int64), copies)


def font_digits(
    faces: list[FontFace], renders: int, rng: np.random.Generator, mix: StyleMix = StyleMix()
) -> tuple[np.ndarray, np.ndarray]:
    """``renders`` random styles of each digit 0-9 in each face -> images (F·10·renders, 1, 32, 32)
    and labels. Fonts are thickened less than handwriting (their bold faces are already thick)."""
    mix = replace(mix, thickness=tuple(min(t, 5) for t in mix.thickness))
    out, labels = [], []
    for face in faces:
        for digit in range(10):
            for _ in range(renders):
                out.append(styled(render(face, digit, rng), rng, mix))
                labels.append(digit)
    if not out:
        return np.zeros((0, 1, 32, 32), dtype=np.float32), np.zeros(0, dtype=np.int64)
    return np.stack(out).astype(np.float32), np.asarray(labels, dtype=np.int64)
