"""The Vision Transformer's configuration: one frozen dataclass, saved as ``config.json``."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from ..core.config import BaseConfig, ModelConfig

VISION_KINDS = ("vision-classifier", "vision-segmenter")
SEG_HEADS = ("pixels", "upsample", "pixel_mlp")


@dataclass(frozen=True)
class VisionConfig(BaseConfig):
    """Everything needed to rebuild a ViT (the layer settings shared with text models are ``BaseConfig``'s;
    those declared again here only change their default).

    Images are (channels, image_size, image_size) floats in [0, 1], cut into a
    (image_size / patch_size)² grid of patches. ``seg_head="pixels"``: each patch token predicts
    its own p × p pixels (a linear layer to classes × p × p); ``"upsample"``: one class score per
    patch, repeated over its pixels (the course notebook's ``nn.Upsample(mode='nearest')``);
    ``"pixel_mlp"``: a small MLP per pixel reads its patch token's final state together with the
    pixel's own values (a skip connection from the input, as U-Net decoders have), so edges
    come out sharp while the token carries what the object is.
    ``label_names`` are the classes; for a segmenter the first is the background.
    """

    kind: str = "vision-classifier"
    num_layers: int = 4
    d_ff: int = 128
    activation: str = "gelu"
    norm_first: bool = True
    final_norm: bool = True
    label_names: tuple[str, ...] = tuple(str(d) for d in range(10))
    image_size: int = 32
    channels: int = 1
    patch_size: int = 8
    class_token: bool = True
    seg_head: str = "pixels"
    seg_hidden: int = 64
    # per-channel normalisation the model applies to its [0, 1] input, (x - mean) / std, as an imported
    # model's preprocessor does (Hugging Face ViT: 0.5, 0.5); empty: the pixels are used as they are
    pixel_mean: tuple[float, ...] = ()
    pixel_std: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.kind not in VISION_KINDS:
            raise ValueError(f"kind must be one of {', '.join(VISION_KINDS)}; got {self.kind!r}.")
        if self.seg_head not in SEG_HEADS:
            raise ValueError(f"seg_head must be one of {', '.join(SEG_HEADS)}; got {self.seg_head!r}.")
        if self.patch_size <= 0 or self.image_size % self.patch_size:
            raise ValueError(f"image_size ({self.image_size}) must be a multiple of patch_size ({self.patch_size}).")
        if self.channels <= 0:
            raise ValueError("channels must be positive.")
        if len(self.label_names) < 2:
            raise ValueError("A vision model needs at least two label_names.")
        if len(self.pixel_mean) != len(self.pixel_std) or len(self.pixel_mean) not in (0, self.channels):
            raise ValueError(f"pixel_mean and pixel_std need one value per channel ({self.channels}) or none.")
        if any(s <= 0 for s in self.pixel_std):
            raise ValueError("pixel_std values must be positive.")
        if self.kind == "vision-classifier" and not self.class_token:
            raise ValueError("A vision classifier reads its class token: class_token must be True.")

    @property
    def task(self) -> str:
        """``"classification"`` or ``"segmentation"``."""
        return "classification" if self.kind == "vision-classifier" else "segmentation"

    @property
    def grid(self) -> int:
        """Patches per side."""
        return self.image_size // self.patch_size

    @property
    def num_patches(self) -> int:
        return self.grid**2

    @property
    def num_tokens(self) -> int:
        """Tokens the encoder sees: the class token (if any) and the patches."""
        return self.num_patches + int(self.class_token)

    @property
    def patch_dim(self) -> int:
        return self.channels * self.patch_size**2

    @property
    def num_classes(self) -> int:
        return len(self.label_names)

    def encoder_config(self) -> ModelConfig:
        """The core ``ModelConfig`` the shared encoder layers are built from."""
        return ModelConfig(**self.layer_settings(), positional="none")

    @classmethod
    def from_dict(cls, data: dict) -> VisionConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"Unknown vision config keys: {', '.join(unknown)}.")
        values = dict(data)
        for key in ("label_names", "pixel_mean", "pixel_std"):
            if key in values:
                values[key] = tuple(values[key])
        return cls(**values)

    @classmethod
    def load(cls, path: str | Path) -> VisionConfig:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
