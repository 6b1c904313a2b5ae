"""Tiny vision models and test pictures made in the tests (no files committed)."""

from __future__ import annotations

import io

import numpy as np
import torch
from PIL import Image

from transformer.vision import VisionConfig, VisionModel, VisionTransformer


def tiny_model(kind: str = "vision-classifier", seed: int = 0, **changes) -> VisionModel:
    """A small random ViT in eval mode: 16×16 images, 4×4 patches (16 patches), 2 layers, 2 heads."""
    torch.manual_seed(seed)
    values = dict(kind=kind, image_size=16, channels=1, patch_size=4, d_model=16, num_heads=2, num_layers=2, d_ff=32)
    if kind == "vision-segmenter":
        values.update(channels=3, label_names=("background", "circle", "square", "triangle"))
    values.update(changes)
    config = VisionConfig(**values)
    model = VisionTransformer(config).eval()
    with torch.no_grad():
        if model.cls_token is not None:
            model.cls_token.normal_()
        model.positional_embedding.normal_()
    return VisionModel(model, config, "tiny")


def png_bytes(array: np.ndarray, mode: str | None = None, fmt: str = "PNG", **save) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(array, mode=mode).save(buffer, fmt, **save) if mode else Image.fromarray(array).save(
        buffer, fmt, **save
    )
    return buffer.getvalue()
