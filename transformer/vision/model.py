"""The Vision Transformer: patch embedding, class token, learned positions, core encoder layers, a head."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..core.attention import HeadWeights
from ..core.layers import EncoderLayer
from .config import VisionConfig
from .patches import patchify, unpatchify


@dataclass(frozen=True)
class VisionOutput:
    """One forward pass. logits: (B, K) for a classifier, (B, K, H, W) for a segmenter;
    weights: one HeadWeights per layer ((B, heads, T, T)) when asked, else empty."""

    logits: torch.Tensor
    weights: tuple[HeadWeights, ...]


class VisionTransformer(nn.Module):
    """ViT for classification (head on the class token) or segmentation (head on each patch)."""

    def __init__(self, config: VisionConfig) -> None:
        super().__init__()
        self.config = config
        d = config.d_model
        self.patch_embedding = nn.Linear(config.patch_dim, d)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d)) if config.class_token else None
        self.positional_embedding = nn.Parameter(torch.randn(1, config.num_tokens, d) * 0.02)
        self.dropout = nn.Dropout(config.dropout)
        if config.pixel_mean:  # not persistent: rebuilt from the config
            shape = (1, config.channels, 1, 1)
            self.register_buffer("pixel_mean", torch.tensor(config.pixel_mean).reshape(shape), persistent=False)
            self.register_buffer("pixel_std", torch.tensor(config.pixel_std).reshape(shape), persistent=False)
        encoder = config.encoder_config()
        self.layers = nn.ModuleList(EncoderLayer(encoder) for _ in range(config.num_layers))
        self.norm = nn.LayerNorm(d, eps=config.layer_norm_eps) if config.final_norm else nn.Identity()
        self.head = nn.Linear(d, self._head_outputs())
        if config.task == "segmentation" and config.seg_head == "pixel_mlp":
            self.pixel_proj = nn.Linear(config.channels, config.seg_hidden, bias=False)
            self.pixel_place = nn.Parameter(torch.zeros(config.patch_size**2, config.seg_hidden))
            self.pixel_out = nn.Linear(config.seg_hidden, config.num_classes)

    def _head_outputs(self) -> int:
        c = self.config
        if c.task == "classification":
            return c.num_classes
        if c.seg_head == "pixel_mlp":
            return c.seg_hidden
        return c.num_classes * c.patch_size**2 if c.seg_head == "pixels" else c.num_classes

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        """images (B, C, H, W) in [0, 1] -> tokens (B, T, D): [class token,] patches, plus positions.
        Images are first normalised per channel where the config says so."""
        if self.config.pixel_mean:
            images = (images - self.pixel_mean.to(images.dtype)) / self.pixel_std.to(images.dtype)
        x = self.patch_embedding(patchify(images, self.config.patch_size))  # (B, P, D)
        if self.cls_token is not None:
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)  # (B, 1+P, D)
        return self.dropout(x + self.positional_embedding)

    def forward(
        self, images: torch.Tensor, need_weights: bool = False, head_mask: torch.Tensor | None = None
    ) -> VisionOutput:
        """images (B, C, H, W) in [0, 1]; head_mask (layers, heads) of 1 (on) / 0 (off) or None."""
        self._check(images)
        x = self.embed(images)
        weights = []
        for i, layer in enumerate(self.layers):
            x, w = layer(x, None, need_weights, None if head_mask is None else head_mask[i])
            if w is not None and need_weights:
                weights.append(w)
        x = self.norm(x)
        return VisionOutput(self._head(x, images), tuple(weights))

    def _head(self, x: torch.Tensor, images: torch.Tensor) -> torch.Tensor:
        c = self.config
        if c.task == "classification":
            return self.head(x[:, 0])  # (B, K)
        patches = self.head(x[:, int(c.class_token) :])  # (B, P, K·p·p), (B, P, K) or (B, P, hidden)
        if c.seg_head == "pixel_mlp":
            return self._pixel_mlp(patches, images)
        if c.seg_head == "pixels":
            return unpatchify(patches, c.patch_size, c.num_classes, (c.grid, c.grid))  # (B, K, H, W)
        grid = patches.transpose(1, 2).reshape(-1, c.num_classes, c.grid, c.grid)  # (B, K, gh, gw)
        return F.interpolate(grid, scale_factor=c.patch_size, mode="nearest")

    def _pixel_mlp(self, token_part: torch.Tensor, images: torch.Tensor) -> torch.Tensor:
        """token_part (B, P, hidden) + each pixel's own values -> logits (B, K, H, W)."""
        c = self.config
        b, p2 = images.shape[0], c.patch_size**2
        pixels = (
            patchify(images, c.patch_size).reshape(b, c.num_patches, c.channels, p2).transpose(2, 3)
        )  # (B, P, p², C)
        hidden = token_part.unsqueeze(2) + self.pixel_proj(pixels) + self.pixel_place  # (B, P, p², hidden)
        logits = self.pixel_out(F.gelu(hidden))  # (B, P, p², K)
        flat = logits.permute(0, 1, 3, 2).reshape(b, c.num_patches, -1)  # (B, P, K·p·p), (class, row, col) order
        return unpatchify(flat, c.patch_size, c.num_classes, (c.grid, c.grid))

    def _check(self, images: torch.Tensor) -> None:
        c = self.config
        want = (c.channels, c.image_size, c.image_size)
        if images.dim() != 4 or tuple(images.shape[1:]) != want:
            raise ValueError(f"Images must be (batch, {want[0]}, {want[1]}, {want[2]}); got {tuple(images.shape)}.")
