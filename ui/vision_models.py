"""The Vision page's models, pictures and cached analyses.

Bundled vision models are loaded once per (model, device) and shared by all sessions
(``st.cache_resource``, read-only at inference). Analyses, the digits' test set and the scenes go
through the cached service (``ui.compute``): shared for bundled models, this session's for an upload.
Shared values are handed out as they are, so their arrays are made read-only.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import streamlit as st

from transformer.core.devices import resolve_device
from transformer.vision import VisionAnalysis, VisionModel, analyze_images, load_vision_bundle
from transformer.vision.digits import load_digits_splits
from transformer.vision.images import ImageError, PreparedImage, prepare_image
from transformer.vision.shapes import SHAPES, Scene, random_scene

from . import session
from .compute import compute
from .i18n import translate
from .models import MODELS_DIR, bundled_models
from .vision_upload import vision_uploads

VISION_KINDS = ("vision-classifier", "vision-segmenter")
TEST_SCENES = 60  # the segmenter's browsable test scenes (seeded like its held-out test set)
# literal keys: the catalogue test finds them here
IMAGE_ERRORS = {
    "not_image": "vision.error_not_image",
    "damaged": "vision.error_damaged",
    "empty": "vision.error_empty",
    "too_big": "vision.error_too_big",
    "too_many_pixels": "vision.error_too_many_pixels",
    "animated": "vision.error_animated",
    "limit_time": "vision.error_limit_time",
    "limit_memory": "vision.error_limit_memory",
    "limit_busy": "vision.error_limit_busy",
}
BUNDLED_FORMAT = "attention-lab"
DIGITS_MODEL, SHAPES_MODEL = "vit-digits", "vit-shapes"  # the bundled models the test pictures belong to
MAX_BARS = 10  # classes drawn as bars; a model with more (ImageNet's 1,000) shows its most likely ones
# what an importer assumed about a model (transformer.hf.vit, transformer.vision.course_import), in the user's words
MODEL_NOTES = {
    "normalisation_default": "vision.note_normalisation_default",
    "label_names_numbered": "vision_upload.note_numbered",
}
IMAGE_NOTES = {
    "cmyk": "vision.note_cmyk",
    "alpha": "vision.note_alpha",
    "bits16": "vision.note_bits16",
    "grey": "vision.note_grey",
    "inverted": "vision.note_inverted",
    "cropped": "vision.note_cropped",
    "resized": "vision.note_resized",
}


def vision_models() -> list[str]:
    """Bundled vision models (the digit classifier first), then this session's uploads."""
    return sorted(bundled_models(VISION_KINDS), key=lambda n: n != "vit-digits") + list(vision_uploads())


def get_vision(name: str, device: str) -> VisionModel:
    """A bundled model (shared, cached) or this session's upload ``name`` on ``device``."""
    uploads = vision_uploads()
    if name not in uploads:
        return load_vision_shared(name, device)
    loaded = uploads[name]
    if str(next(loaded.model.parameters()).device) != str(resolve_device(device)):
        loaded = replace(loaded, model=loaded.model.to(resolve_device(device)))
        session.store_upload(name, loaded)
    return loaded


def analyze_vision(name: str, device: str, images: np.ndarray, head_mask: tuple | None = None) -> VisionAnalysis:
    """images (B, C, H, W); head_mask as nested tuples (layers × heads) of 0/1, or None. Cached per
    input: shared for a bundled model, this session's for an upload (``ui.compute``)."""
    mask = None if head_mask is None else np.asarray(head_mask, dtype=np.float32)

    def analysed() -> VisionAnalysis:
        own = np.array(images, dtype=np.float32)  # a copy: the result's arrays are frozen, the caller's are not
        return read_only(analyze_images(get_vision(name, device), own, mask))

    return compute("vision-analysis", (device, array_key(images), head_mask), analysed, model=name)


@st.cache_resource(show_spinner=False, max_entries=4)
def load_vision_shared(name: str, device: str) -> VisionModel:
    return load_vision_bundle(MODELS_DIR / name, resolve_device(device))


def digit_test_set() -> tuple[np.ndarray, np.ndarray]:
    """The held-out digits the classifier never saw: images (N, 1, 32, 32), labels (N,); read-only."""

    def loaded() -> tuple[np.ndarray, np.ndarray]:
        images, labels = load_digits_splits(0).test
        return _frozen(images), _frozen(labels)

    return compute("digit-test-set", (), loaded, model=DIGITS_MODEL)


def scene(seed: int, kinds: tuple[str, ...] | None = None) -> Scene:
    """A seeded scene; ``kinds`` None: 1 to 3 random shapes. Its arrays are read-only."""

    def made() -> Scene:
        return read_only(random_scene(np.random.default_rng(seed), None if kinds is None else list(kinds)))

    return compute("scene", (seed, kinds), made, model=SHAPES_MODEL)


def array_key(images: np.ndarray) -> tuple:
    """A small hashable key for a batch of pictures: shape, dtype and a digest of the bytes."""
    data = np.ascontiguousarray(images)
    return data.shape, str(data.dtype), hashlib.blake2b(data.tobytes(), digest_size=16).hexdigest()


def read_only(value):
    """``value`` (a dataclass) with its numpy arrays made read-only: a shared value a page changed in
    place would change for every session, so that fails loudly instead."""
    for field in fields(value):
        part = getattr(value, field.name)
        if isinstance(part, np.ndarray):
            _frozen(part)
    return value


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def test_scene_seed(index: int) -> int:
    """Seeds of the browsable test scenes (apart from the training seeds)."""
    return 50_000 + index


def shape_kinds() -> tuple[str, ...]:
    return SHAPES


def read_upload(data: bytes, loaded: VisionModel) -> PreparedImage:
    """An uploaded picture as the model's input; raises ImageError."""
    c = loaded.config
    return prepare_image(data, c.image_size, c.channels, digit_style=c.task == "classification" and c.channels == 1)


def image_error_text(err: ImageError, lang: str) -> str:
    """The user's message for a refused picture."""
    return translate(IMAGE_ERRORS.get(err.code, "vision.error_not_image"), lang, **err.fields)


def note_texts(notes: tuple[str, ...], lang: str) -> list[str]:
    return [translate(IMAGE_NOTES[n], lang) for n in notes if n in IMAGE_NOTES]


def head_mask_tuple(off: list[tuple[int, int]], layers: int, heads: int) -> tuple | None:
    """Switched-off (layer, head) pairs -> a hashable layers × heads gate (None when none is off)."""
    if not off:
        return None
    gate = np.ones((layers, heads), dtype=int)
    for layer, head in off:
        gate[layer, head] = 0
    return tuple(tuple(int(v) for v in row) for row in gate)


def analysis_json(loaded: VisionModel, result: VisionAnalysis, index: int, device: str) -> bytes:
    """One image in the CLI's JSON format (``python -m transformer inspect --image``)."""
    from transformer.vision.inspect import prediction_record

    mask = None if result.mask is None else result.mask[index]
    record = {
        "tokens": list(result.tokens),
        "prediction": prediction_record(loaded, result.probabilities[index] if mask is None else None, mask),
        "attention": {"encoder": np.round(result.attention[index], 6).tolist()},
    }
    c = loaded.config
    model = {"kind": c.kind, "format": loaded.format, "config": c.to_dict(), "assumptions": {}}
    return json.dumps({"model": model, "device": device, "inputs": [record]}).encode("utf-8")


def metrics_of(name: str) -> dict:
    path = Path(MODELS_DIR / name / "metrics.json")
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def own_pictures_only(loaded: VisionModel) -> bool:
    """An uploaded or imported model: the bundled test pictures need not fit its size, channels or classes."""
    return loaded.format != BUNDLED_FORMAT


def shown_classes(probabilities: np.ndarray) -> np.ndarray:
    """Indices of the classes drawn as bars: every class, or the MAX_BARS most likely (most likely first)."""
    if len(probabilities) <= MAX_BARS:
        return np.arange(len(probabilities))
    return np.argsort(-probabilities, kind="stable")[:MAX_BARS]


def normalisation_text(values: tuple[float, ...]) -> str:
    """Per-channel numbers as "0.485, 0.456, 0.406" ("—" when the model takes its pixels as they are)."""
    return ", ".join(f"{v:.3f}" for v in values) or "—"
