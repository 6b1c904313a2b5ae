"""``python -m transformer inspect --image``: the CLI's JSON object (DESIGN.md) for vision models."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..core.devices import resolve_device
from .analysis import analyze_images
from .bundle import VisionModel, is_vision_bundle, load_vision_bundle
from .images import prepare_image


def is_vision_model(path: str | Path) -> bool:
    """True for a bundled vision-model folder, a Hugging Face ViT folder (what the Vision page opens) or a
    checkpoint file holding a course-style ViT."""
    path = Path(path)
    if path.is_dir():
        return is_vision_bundle(path) or is_hf_vit_folder(path)
    if path.is_file() and path.suffix.lower() in (".pt", ".pth", ".bin", ".safetensors"):
        from .course_import import is_course_vit_file

        return is_course_vit_file(path)
    return False


def is_hf_vit_folder(folder: Path) -> bool:
    """A Hugging Face folder whose config.json says ``model_type`` "vit"."""
    from ..hf import is_hf_folder
    from ..hf.folder import read_hf_config

    if not is_hf_folder(folder):
        return False
    try:
        return read_hf_config(folder).get("model_type") == "vit"
    except Exception:  # noqa: BLE001 - an unreadable config is not a vision model; the text path says why
        return False


def load_vision_model(path: str | Path, device: str = "cpu") -> VisionModel:
    """A bundled folder or a course-style checkpoint file, on ``device``."""
    path = Path(path)
    if path.is_dir() and is_hf_vit_folder(path):
        from ..hf import load_hf_folder

        return load_hf_folder(path, device)
    if path.is_dir():
        return load_vision_bundle(path, device)
    from .course_import import load_course_vit_file

    return load_course_vit_file(path, device=device)


def prediction_record(loaded: VisionModel, probabilities: np.ndarray, mask: np.ndarray | None) -> dict:
    """A classifier's label and probabilities, or a segmenter's mask as rows of class ids."""
    names = loaded.config.label_names
    if mask is not None:
        counts = np.bincount(mask.ravel(), minlength=len(names))
        return {"labels": list(names), "mask": mask.tolist(), "pixels": {n: int(c) for n, c in zip(names, counts)}}
    probs = {n: round(float(p), 6) for n, p in zip(names, probabilities)}
    return {"label": names[int(probabilities.argmax())], "probabilities": probs}


def inspect_images(path: str | Path, image_paths: list[str], device: str = "cpu", attention: bool = True) -> dict:
    """One record per image, in order: tokens, prediction, and (when asked) ``attention.encoder``,
    layers × heads × (1 + patches) × (1 + patches). Raises ValueError / ImageError / OSError."""
    resolved = str(resolve_device(device))
    loaded = load_vision_model(path, resolved)
    config = loaded.config
    records = []
    for image_path in image_paths:
        prepared = prepare_image(
            Path(image_path).read_bytes(),
            config.image_size,
            config.channels,
            digit_style=config.task == "classification" and config.channels == 1,
        )
        result = analyze_images(loaded, prepared.array[None])
        mask = None if result.mask is None else result.mask[0]
        record = {
            "image": str(image_path),
            "original_size": list(prepared.original_size),
            "conversions": list(prepared.notes),
            "tokens": list(result.tokens),
            "prediction": prediction_record(loaded, result.probabilities[0] if mask is None else None, mask),
        }
        if attention:
            record["attention"] = {"encoder": np.round(result.attention[0], 6).tolist()}
        records.append(record)
    return {
        "model": {
            "kind": config.kind,
            "format": loaded.format,
            "config": config.to_dict(),
            "assumptions": {note: f"{loaded.format} family default" for note in loaded.notes},
        },
        "device": resolved,
        "inputs": records,
    }
