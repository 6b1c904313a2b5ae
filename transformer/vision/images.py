"""Reading a user's picture (PNG/JPEG bytes) into what a vision model takes, with clear refusals.

Refused (``ImageError`` with a ``code`` the app translates): not an image, an empty (0-pixel)
image, one too large to open safely, an animated image. Converted, with a note for each step:
CMYK and palette images to RGB, transparency flattened onto white, 16-bit to 8-bit, colour to
grey (or grey to colour), and a bright background inverted for the digit model (its digits are
bright strokes on black).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

MAX_BYTES = 20 * 1024 * 1024
MAX_PIXELS = 25_000_000  # e.g. 5000 × 5000


class ImageError(ValueError):
    """A picture that cannot be used; ``code`` names the reason, ``fields`` its numbers."""

    def __init__(self, code: str, message: str, **fields) -> None:
        super().__init__(message)
        self.code = code
        self.fields = fields


@dataclass(frozen=True)
class PreparedImage:
    """array (C, S, S) float32 in [0, 1] for the model; original (width, height) and mode;
    notes: codes of the conversions made (``"cmyk"``, ``"alpha"``, ``"bits16"``, ``"grey"``,
    ``"colour"``, ``"inverted"``, ``"cropped"``, ``"resized"``)."""

    array: np.ndarray
    original_size: tuple[int, int]
    original_mode: str
    notes: tuple[str, ...]


def open_image(data: bytes):
    """A PIL image from ``data``, checked; raises ImageError."""
    from PIL import Image, UnidentifiedImageError

    if len(data) > MAX_BYTES:
        raise ImageError("too_big", f"The file is {len(data) / 1e6:.1f} MB; the limit is 20 MB.", mb=len(data) / 1e6)
    if 0 in (_png_size(data) or (1, 1)):
        raise ImageError("empty", "The image has no pixels (0 × 0).")
    try:
        image = Image.open(io.BytesIO(data))
    except (UnidentifiedImageError, OSError, ValueError) as err:
        raise ImageError("not_image", "This file is not an image that can be read (use PNG or JPEG).") from err
    width, height = image.size
    if width == 0 or height == 0:
        raise ImageError("empty", "The image has no pixels (0 × 0).")
    if width * height > MAX_PIXELS:
        raise ImageError(
            "too_many_pixels", f"The image is {width} × {height} pixels; the limit is 25 million.", w=width, h=height
        )
    if getattr(image, "n_frames", 1) > 1:
        raise ImageError("animated", "This is an animated image; save one frame as PNG and upload that.")
    try:
        image.load()
    except (OSError, ValueError, SyntaxError) as err:
        raise ImageError("not_image", "The image file is damaged and cannot be read.") from err
    return image


def _png_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG header (PIL refuses a 0-pixel PNG as 'not an image')."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR" and len(data) >= 24:
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    return None


def to_float(image) -> tuple[np.ndarray, list[str]]:
    """Any PIL mode -> (H, W, 3) float32 RGB in [0, 1], and the notes of what was converted."""
    notes = []
    if image.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        values = np.asarray(image, dtype=np.float64)
        top = 65535.0 if values.max() > 255 or image.mode.startswith("I;16") else 255.0
        notes.append("bits16")
        grey = np.clip(values / top, 0, 1).astype(np.float32)
        return np.repeat(grey[..., None], 3, axis=2), notes
    if image.mode == "CMYK":
        notes.append("cmyk")
    if "A" in image.mode or (image.mode == "P" and "transparency" in image.info):
        notes.append("alpha")
        rgba = np.asarray(image.convert("RGBA"), dtype=np.float32) / 255.0
        alpha = rgba[..., 3:4]
        return rgba[..., :3] * alpha + (1 - alpha), notes  # flattened onto white
    return np.asarray(image.convert("RGB"), dtype=np.float32) / 255.0, notes


def prepare_image(data: bytes, size: int, channels: int, digit_style: bool = False) -> PreparedImage:
    """Bytes of a picture -> the model's (channels, size, size) input; raises ImageError.

    ``digit_style``: invert a bright background, crop to the ink and centre it with a margin,
    as the training digits are drawn."""
    image = open_image(data)
    rgb, notes = to_float(image)
    if channels == 1:
        pixels = rgb.mean(axis=2, keepdims=True)  # (H, W, 1)
        if image.mode not in ("L", "1", "I;16", "I;16B", "I;16L", "I", "F", "LA"):
            notes.append("grey")
    else:
        pixels = rgb
    if digit_style:
        pixels, more = _digit_like(pixels)
        notes.extend(more)
    array = _resize(pixels, size)
    if pixels.shape[:2] != (size, size):
        notes.append("resized")
    return PreparedImage(array, image.size, image.mode, tuple(notes))


def _digit_like(pixels: np.ndarray) -> tuple[np.ndarray, list[str]]:
    notes = []
    if pixels.mean() > 0.5:
        pixels = 1 - pixels
        notes.append("inverted")
    ink = pixels.max(axis=2) > 0.25
    if ink.any() and not ink.all():
        rows, cols = np.where(ink)
        box = pixels[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1]
        side = int(max(box.shape[:2]) * 1.15) + 1
        square = np.zeros((side, side, pixels.shape[2]), dtype=np.float32)
        r0, c0 = (side - box.shape[0]) // 2, (side - box.shape[1]) // 2
        square[r0 : r0 + box.shape[0], c0 : c0 + box.shape[1]] = box
        pixels = square
        notes.append("cropped")
    return pixels, notes


def _resize(pixels: np.ndarray, size: int) -> np.ndarray:
    """(H, W, C) -> (C, size, size): padded to a square (edge colour), then area-averaged."""
    import torch
    import torch.nn.functional as F

    h, w, _ = pixels.shape
    side = max(h, w)
    if h != w:
        padded = np.empty((side, side, pixels.shape[2]), dtype=np.float32)
        padded[:] = np.median(np.concatenate([pixels[0], pixels[-1], pixels[:, 0], pixels[:, -1]]), axis=0)
        padded[(side - h) // 2 : (side - h) // 2 + h, (side - w) // 2 : (side - w) // 2 + w] = pixels
        pixels = padded
    x = torch.from_numpy(np.ascontiguousarray(pixels.transpose(2, 0, 1))).unsqueeze(0).float()
    mode = "area" if side >= size else "bilinear"
    kwargs = {} if mode == "area" else {"align_corners": False}
    x = F.interpolate(x, size=(size, size), mode=mode, **kwargs)
    return x[0].clamp(0, 1).numpy().astype(np.float32)
