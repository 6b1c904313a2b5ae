"""Checkpoints of the course notebook's ``ViT`` / ``ViTSegmentation`` (``patch_embedding``,
``cls_token``, ``positional_embedding``, ``transformer.layers.*`` of ``nn.TransformerEncoder``,
``mlp_head.0`` / ``segmentation_head.0``), mapped onto :class:`VisionTransformer`.

The notebook's code as printed does not run as meant; we reproduce what it intends, and list
each assumption in ``VisionModel.notes``:
- its encoder is fed batch-first tensors: we run it batch-first;
- a patch is the p × p pixels of all channels of one grid cell, flattened as (channel, row, column);
- ``nn.TransformerEncoderLayer`` defaults: post-norm, ReLU, LayerNorm eps 1e-5;
- the segmentation head scores each patch and repeats the score over its p × p pixels.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import torch

from ..checkpoints.safe_load import read_checkpoint
from .bundle import VisionModel
from .config import VisionConfig
from .model import VisionTransformer

LAYER_PREFIX = "transformer.layers."
HEADS = {"mlp_head.0": "vision-classifier", "segmentation_head.0": "vision-segmenter"}
ASSUMPTIONS = (
    "batch_first",
    "patch_order_chw",
    "post_norm_relu",
    "segmentation_upsample_nearest",
)


def is_course_vit(state: dict[str, torch.Tensor]) -> bool:
    """True when the names of ``state`` are the course ViT's."""
    has_head = any(f"{h}.weight" in state for h in HEADS)
    return "patch_embedding.weight" in state and "positional_embedding" in state and has_head


def is_course_vit_file(path: str | Path) -> bool:
    try:
        return is_course_vit(read_checkpoint(path).state)
    except Exception:  # noqa: BLE001 - any unreadable file is simply not a course ViT
        return False


def infer_config(
    state: dict[str, torch.Tensor],
    num_heads: int,
    channels: int = 3,
    label_names: tuple[str, ...] | None = None,
) -> VisionConfig:
    """The config the weights imply; ``num_heads`` and ``channels`` cannot be read from them."""
    d_model, patch_dim = state["patch_embedding.weight"].shape
    patch = math.isqrt(patch_dim // channels)
    if patch * patch * channels != patch_dim:
        raise ValueError(f"A patch of {patch_dim} numbers is not {channels} channels × p × p; give the channels.")
    class_token = "cls_token" in state
    tokens = state["positional_embedding"].shape[1]
    grid = math.isqrt(tokens - int(class_token))
    if grid * grid != tokens - int(class_token):
        raise ValueError(f"{tokens} position embeddings do not make a square grid of patches.")
    head = next(h for h in HEADS if f"{h}.weight" in state)
    classes = state[f"{head}.weight"].shape[0]
    layers = len({k[len(LAYER_PREFIX) :].split(".")[0] for k in state if k.startswith(LAYER_PREFIX)})
    return VisionConfig(
        kind=HEADS[head],
        image_size=grid * patch,
        channels=channels,
        patch_size=patch,
        d_model=d_model,
        num_heads=num_heads,
        num_layers=layers,
        d_ff=state[f"{LAYER_PREFIX}0.linear1.weight"].shape[0] if layers else 4 * d_model,
        dropout=0.0,
        activation="relu",
        norm_first=False,
        final_norm="transformer.norm.weight" in state,
        qkv_bias=f"{LAYER_PREFIX}0.self_attn.in_proj_bias" in state if layers else True,
        class_token=class_token,
        seg_head="upsample",
        label_names=label_names or tuple(f"class {k}" for k in range(classes)),
    )


def convert_state(state: dict[str, torch.Tensor], config: VisionConfig) -> dict[str, torch.Tensor]:
    """Course names -> this package's names (fused in_proj split into w_q, w_k, w_v)."""
    out = {k: state[k] for k in ("patch_embedding.weight", "patch_embedding.bias", "positional_embedding")}
    if config.class_token:
        out["cls_token"] = state["cls_token"]
    head = next(h for h in HEADS if f"{h}.weight" in state)
    out["head.weight"], out["head.bias"] = state[f"{head}.weight"], state[f"{head}.bias"]
    if config.final_norm:
        out["norm.weight"], out["norm.bias"] = state["transformer.norm.weight"], state["transformer.norm.bias"]
    for i in range(config.num_layers):
        src, dst = f"{LAYER_PREFIX}{i}.", f"layers.{i}."
        out.update(_layer(state, src, dst, config.qkv_bias))
    return out


def _layer(state: dict, src: str, dst: str, bias: bool) -> dict[str, torch.Tensor]:
    out = {}
    for part, name in zip(state[f"{src}self_attn.in_proj_weight"].chunk(3), ("w_q", "w_k", "w_v")):
        out[f"{dst}self_attn.{name}.weight"] = part
    if bias:
        for part, name in zip(state[f"{src}self_attn.in_proj_bias"].chunk(3), ("w_q", "w_k", "w_v")):
            out[f"{dst}self_attn.{name}.bias"] = part
    pairs = {
        "self_attn.out_proj": "self_attn.w_o",
        "linear1": "ffn.linear1",
        "linear2": "ffn.linear2",
        "norm1": "attn_block.norm",
        "norm2": "ffn_block.norm",
    }
    for theirs, ours in pairs.items():
        for kind in ("weight", "bias"):
            if f"{src}{theirs}.{kind}" in state:
                out[f"{dst}{ours}.{kind}"] = state[f"{src}{theirs}.{kind}"]
    return out


def import_course_vit(
    state: dict[str, torch.Tensor],
    num_heads: int = 4,
    channels: int = 3,
    label_names: tuple[str, ...] | None = None,
    name: str = "",
    device: str | torch.device = "cpu",
) -> VisionModel:
    """A course-style state dict as a VisionModel (eval mode); raises ValueError when it does not fit."""
    if not is_course_vit(state):
        raise ValueError("These weights are not a course-style ViT (patch_embedding, positional_embedding, a head).")
    config = infer_config(state, num_heads, channels, label_names)
    model = VisionTransformer(config)
    model.load_state_dict(convert_state(state, config))
    notes = ASSUMPTIONS if config.task == "segmentation" else ASSUMPTIONS[:3]
    notes += ("channels_3",) if channels == 3 else ()
    notes += () if label_names else ("label_names_numbered",)
    return VisionModel(model.to(device).eval(), config, name, "course-vit", None, notes)


def load_course_vit_file(
    path: str | Path, num_heads: int | None = None, device: str | torch.device = "cpu"
) -> VisionModel:
    """Read a checkpoint file (safely) and import it; heads from the file's hints, else 4."""
    raw = read_checkpoint(path)
    hinted = raw.hints.get("num_heads", raw.hints.get("nhead"))
    heads = num_heads or int(hinted or 4)
    labels = raw.hints.get("label_names")
    loaded = import_course_vit(raw.state, heads, 3, tuple(labels) if labels else None, Path(path).name, device)
    if num_heads is None and hinted is None:
        loaded = replace(loaded, notes=(*loaded.notes, "num_heads_4"))
    return loaded
