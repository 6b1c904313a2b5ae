"""Reading a user's picture (PNG/JPEG bytes) into what a vision model takes, with clear refusals.

Every picture is decoded in a child process with the time and memory limits of checkpoint
parsing (:func:`transformer.checkpoints.isolation.run_isolated`): a decompression bomb or a
picture built to make the decoder allocate gigabytes costs the child, never the server. In the
child the header is read first (``Image.open`` is lazy) and the pixel count checked against
:data:`MAX_PIXELS` before a single pixel is decoded; the picture is then shrunk in PIL (JPEG
decoded at a reduced scale, ``Image.reduce`` for the rest) to a few times the model's side
before any float copy is made.

Refused (``ImageError`` with a ``code`` the app translates): not an image, an empty (0-pixel)
image, one too large to open safely, an animated image, one whose decoding hit a limit.
Converted, with a note for each step: CMYK and palette images to RGB, transparency flattened
onto white, 16-bit to 8-bit, colour to grey (or grey to colour), and a bright background
inverted for the digit model (its digits are bright strokes on black).
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

import numpy as np

MAX_BYTES = 20 * 1024 * 1024
MAX_PIXELS = 25_000_000  # e.g. 5000 × 5000
WORK_SIDE_PER_MODEL_SIDE = 8  # shrink in PIL to at most ~8× the model's side before going to float
GREY_MODES = ("L", "1", "I;16", "I;16B", "I;16L", "I;16N", "I", "F", "LA", "La")
DEEP_MODES = ("I;16", "I;16B", "I;16L", "I;16N", "I", "F")
ALPHA_MODES = ("LA", "La", "RGBA", "RGBa", "PA")


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


def check_pixels(width: int, height: int) -> None:
    """Raises ImageError when a picture of ``width`` × ``height`` has no pixels or more than MAX_PIXELS."""
    if width == 0 or height == 0:
        raise ImageError("empty", "The image has no pixels (0 × 0).")
    if width * height > MAX_PIXELS:
        million = f"{width * height / 1e6:,.0f}"
        raise ImageError(
            "too_many_pixels",
            f"The image is {width} × {height} pixels ({million} million); the limit is {MAX_PIXELS / 1e6:g} million.",
            w=width,
            h=height,
            million=million,
            limit=f"{MAX_PIXELS / 1e6:g}",
        )


def open_image(data: bytes):
    """A PIL image from ``data`` with only its header read (nothing decoded), checked: its pixel
    count, its frames. Raises ImageError."""
    from PIL import Image, UnidentifiedImageError

    if len(data) > MAX_BYTES:
        raise ImageError("too_big", f"The file is {len(data) / 1e6:.1f} MB; the limit is 20 MB.", mb=len(data) / 1e6)
    if 0 in (_png_size(data) or (1, 1)):
        raise ImageError("empty", "The image has no pixels (0 × 0).")
    _trust_own_pixel_cap(Image)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # our own cap below is lower
            image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as err:  # only outside the child (PIL's cap is still on there)
        if _png_size(data) is not None:
            check_pixels(*_png_size(data))
        limit = f"{MAX_PIXELS / 1e6:g}"
        message = f"The image has far more than {limit} million pixels."
        raise ImageError("too_many_pixels", message, w="?", h="?", million="?", limit=limit) from err
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as err:
        raise ImageError("not_image", "This file is not an image that can be read (use PNG or JPEG).") from err
    check_pixels(*image.size)
    if getattr(image, "is_animated", False):
        raise ImageError("animated", "This is an animated image; save one frame as PNG and upload that.")
    return image


def _trust_own_pixel_cap(image_module) -> None:
    """In the decoding child, PIL's process-wide bomb check is switched off (our MAX_PIXELS is
    lower and names the size); the change ends with the child. Elsewhere it stays on."""
    from ..checkpoints.isolation import in_isolated_child

    if in_isolated_child():
        image_module.MAX_IMAGE_PIXELS = None


def _png_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG header (PIL refuses a 0-pixel PNG as 'not an image')."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR" and len(data) >= 24:
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    return None


def decode_small(image, size: int):
    """The opened picture decoded and shrunk to at most about ``WORK_SIDE_PER_MODEL_SIDE * size``
    on its longer side, as a PIL image in mode ``L``, ``I``, ``F`` or ``RGB``, and the notes of
    what was converted. Raises ImageError for a damaged file."""
    from PIL import Image

    notes = []
    work = WORK_SIDE_PER_MODEL_SIDE * size
    if image.format == "JPEG":
        image.draft("L" if image.mode == "L" else "RGB", (work, work))  # decode at 1/2, 1/4 or 1/8 scale
    try:
        image.load()
        alpha = image.mode in ALPHA_MODES or (image.mode == "P" and "transparency" in image.info)
        if alpha:
            notes.append("alpha")
            rgba = image if image.mode == "RGBA" else image.convert("RGBA")
            image = rgba.convert("RGBa")  # premultiplied: shrinking then weighs each colour by its alpha
            del rgba
        else:
            image = _plain_mode(image, notes)
    except (OSError, ValueError, SyntaxError, EOFError) as err:
        raise ImageError("damaged", "The image file is damaged (cut off?) and cannot be read.") from err
    factor = max(image.size) // work
    if factor > 1:
        image = image.reduce(factor)  # box average, in the picture's own 8/32-bit pixels
    if alpha:
        rgba = image.convert("RGBA")
        image = Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba).convert("RGB")
    return image, notes


def _plain_mode(image, notes: list[str]):
    """``image`` (without transparency) in one of L, I, F, RGB: CMYK and palettes to RGB."""
    mode = image.mode
    if mode in DEEP_MODES:
        notes.append("bits16")
        return image if mode in ("I", "F") else image.convert("I")
    if mode == "CMYK":
        notes.append("cmyk")
    if mode in ("1", "L"):
        return image if mode == "L" else image.convert("L")
    return image if mode == "RGB" else image.convert("RGB")


def to_float(image, original_mode: str) -> np.ndarray:
    """A (shrunk) L/I/F/RGB PIL image -> (H, W, 3) float32 in [0, 1]."""
    if image.mode in ("I", "F"):
        values = np.asarray(image, dtype=np.float32)
        top = 65535.0 if original_mode.startswith("I;16") or values.max() > 255 else 255.0
        grey = np.clip(values / top, 0, 1)
        return np.repeat(grey[..., None], 3, axis=2)
    values = np.asarray(image, dtype=np.float32) / 255.0
    return np.repeat(values[..., None], 3, axis=2) if values.ndim == 2 else values


def prepare_image(data: bytes, size: int, channels: int, digit_style: bool = False) -> PreparedImage:
    """Bytes of a picture -> the model's (channels, size, size) input; raises ImageError.

    Decoded in a child process (30 s, 1.5 GB: the limits of checkpoint parsing); see the module's
    docstring. ``digit_style``: invert a bright background, crop to the ink and centre it with a
    margin, as the training digits are drawn."""
    from ..checkpoints.errors import LimitError
    from ..checkpoints.isolation import run_isolated

    if len(data) > MAX_BYTES:  # refused before a child is started
        raise ImageError("too_big", f"The file is {len(data) / 1e6:.1f} MB; the limit is 20 MB.", mb=len(data) / 1e6)
    try:
        plain = run_isolated(_prepare_plain, data, size, channels, digit_style, what="Reading the picture")
    except LimitError as err:
        raise ImageError(f"limit_{err.limit}", str(err), limit=f"{err.value:g}") from err
    if "error" in plain:
        raise ImageError(plain["error"], plain["message"], **plain["fields"])
    return PreparedImage(plain["array"].numpy(), tuple(plain["size"]), plain["mode"], tuple(plain["notes"]))


def _prepare_plain(data: bytes, size: int, channels: int, digit_style: bool) -> dict:
    """In the child: :func:`prepare_image_here` as plain data (tensors, strings, numbers), a
    refusal as ``{"error": code, "message", "fields"}``."""
    import torch

    try:
        prepared = prepare_image_here(data, size, channels, digit_style)
    except ImageError as err:
        return {"error": err.code, "message": str(err), "fields": dict(err.fields)}
    return {
        "array": torch.from_numpy(prepared.array),
        "size": list(prepared.original_size),
        "mode": prepared.original_mode,
        "notes": list(prepared.notes),
    }


def prepare_image_here(data: bytes, size: int, channels: int, digit_style: bool = False) -> PreparedImage:
    """:func:`prepare_image` in this process (what its child runs)."""
    image = open_image(data)
    original_size, original_mode = image.size, image.mode
    small, notes = decode_small(image, size)
    rgb = to_float(small, original_mode)
    if channels == 1:
        pixels = rgb.mean(axis=2, keepdims=True)  # (H, W, 1)
        if original_mode not in GREY_MODES:
            notes.append("grey")
    else:
        pixels = rgb
    if digit_style and channels == 1:  # framed as the training digits are (transformer.vision.digits)
        from .digits import dataset_frame

        array, more = dataset_frame(pixels, size)
        notes.extend(more)
    else:
        array = _resize(pixels, size)
    if original_size != (size, size) or pixels.shape[:2] != (size, size):
        notes.append("resized")
    return PreparedImage(array, original_size, original_mode, tuple(notes))


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
