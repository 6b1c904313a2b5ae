"""One analysis call for images: every number the Vision page and the CLI show, as numpy arrays."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from .bundle import VisionModel
from .patches import patchify


@dataclass(frozen=True)
class VisionAnalysis:
    """Everything one run of a ViT on a batch of images gives, float32 numpy arrays.

    images: (B, C, H, W) what the model saw; patches: (B, P, C·p·p); tokens: names of the T
    tokens (``"[CLS]"`` then ``"r,c"`` patch positions); attention: (B, L, H, T, T) softmax weights
    with T = P (+1 with a class token); logits/probabilities: (B, K) for a classifier,
    (B, K, H, W) for a segmenter; mask: (B, H, W) int64 predicted classes (segmenter) or None.
    """

    images: np.ndarray
    patches: np.ndarray
    tokens: tuple[str, ...]
    attention: np.ndarray
    logits: np.ndarray
    probabilities: np.ndarray
    mask: np.ndarray | None
    label_names: tuple[str, ...]
    task: str
    device: str
    seconds: float

    @property
    def predicted(self) -> np.ndarray:
        """(B,) class ids of a classifier's predictions."""
        return self.probabilities.argmax(axis=1)

    def label(self, index: int) -> str:
        return self.label_names[int(self.predicted[index])]


def token_names(grid: int, class_token: bool) -> tuple[str, ...]:
    """``"[CLS]"`` (when present) then ``"row,col"`` for each patch, row by row."""
    names = [f"{r},{c}" for r in range(grid) for c in range(grid)]
    return tuple((["[CLS]"] if class_token else []) + names)


@torch.inference_mode()
def analyze_images(loaded: VisionModel, images: np.ndarray, head_mask: np.ndarray | None = None) -> VisionAnalysis:
    """Run ``images`` (B, C, H, W) float in [0, 1] through the model with every head's weights.
    head_mask (layers, heads): 1 keeps a head, 0 switches it off."""
    config = loaded.config
    model = loaded.model
    device = next(model.parameters()).device
    x = torch.as_tensor(np.asarray(images, dtype=np.float32), device=device)
    gate = None if head_mask is None else torch.as_tensor(np.asarray(head_mask, dtype=np.float32), device=device)
    start = time.perf_counter()
    out = model(x, need_weights=True, head_mask=gate)
    seconds = time.perf_counter() - start
    attention = torch.stack([w.weights for w in out.weights], dim=1).float().cpu().numpy()  # (B, L, H, T, T)
    logits = out.logits.float()
    probabilities = torch.softmax(logits, dim=1).cpu().numpy()
    mask = probabilities.argmax(axis=1).astype(np.int64) if config.task == "segmentation" else None
    return VisionAnalysis(
        images=x.cpu().numpy(),
        patches=patchify(x, config.patch_size).cpu().numpy(),
        tokens=token_names(config.grid, config.class_token),
        attention=attention,
        logits=logits.cpu().numpy(),
        probabilities=probabilities,
        mask=mask,
        label_names=config.label_names,
        task=config.task,
        device=str(device),
        seconds=seconds,
    )
