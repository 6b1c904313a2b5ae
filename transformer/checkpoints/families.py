"""The architecture families we recognise, by how they name their attention weights, and how
each family's attention projections map onto our ``w_q``, ``w_k``, ``w_v``, ``w_o``.

Everything else about a family that changes the computation (LayerNorm eps, the score given
to blocked cells, whether embeddings are scaled) is a default here; what the weights cannot
tell is asked of the user (see ``questions.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .errors import CheckpointError

SEPARATE, IN_PROJ, QKV_PER_HEAD = "separate", "in_proj", "qkv_per_head"
ROLES = ("w_q", "w_k", "w_v", "w_o")


@dataclass(frozen=True)
class Family:
    """name: the ``LoadedModel.format``; title and source: shown to the user.
    layout: SEPARATE (four Linear layers named by ``names``), IN_PROJ (PyTorch's fused
    ``in_proj_weight`` rows [q; k; v] and ``out_proj``), QKV_PER_HEAD (one Linear whose output
    is viewed as (heads, 3·head_dim) and chunked into q, k, v per head; ``names`` = (fused, out))."""

    name: str
    title: str
    source: str
    layout: str
    names: tuple[str, ...]
    layer_norm_eps: float = 1e-5
    mask_fill: float = -1e9
    scale_embedding: bool = False
    asks_norm_first: bool = False
    asks_activation: bool = False
    # when no positional table is saved: what this family's code usually adds. PyTorch tutorials
    # register their sinusoid as a buffer (saved with the weights), so nothing saved means none
    positional: str = "sinusoidal"


FAMILIES = (
    Family(
        "attention-lab",
        "Attention Lab (this app's own format)",
        "transformer/core/model.py",
        SEPARATE,
        ("w_q", "w_k", "w_v", "w_o"),
        scale_embedding=True,
        asks_norm_first=True,
        asks_activation=True,
    ),
    Family(
        "pytorch-nn-transformer",
        "PyTorch nn.TransformerEncoder / nn.Transformer",
        "torch.nn.TransformerEncoderLayer (fused in_proj_weight, out_proj, linear1, linear2, norm1, norm2)",
        IN_PROJ,
        ("in_proj_weight", "out_proj"),
        scale_embedding=True,
        asks_norm_first=True,
        asks_activation=True,
        positional="none",
    ),
    Family(
        "course-encoder",
        "Course notebook encoder classifier (Wq/Wk/Wv/Wo, W1/W2)",
        "the course notebook's MultiHeadAttention, FeedForwardNeuralNetwork and LayerNormalization",
        SEPARATE,
        ("Wq", "Wk", "Wv", "Wo"),
        mask_fill=-1e10,
    ),
    Family(
        "vanilla-encoder-decoder",
        "Encoder-decoder walkthrough (W_Q/W_K/W_V/fc)",
        "the vanilla Transformer walkthrough (PositionalEncoding buffer 'pe', final fc)",
        SEPARATE,
        ("W_Q", "W_K", "W_V", "fc"),
    ),
    Family(
        "wq-wconcat",
        "w_q/w_k/w_v/w_concat attention with gamma/beta LayerNorm",
        "the tutorial Transformer with LayerNorm(gamma, beta) dividing by (std + eps)",
        SEPARATE,
        ("w_q", "w_k", "w_v", "w_concat"),
        layer_norm_eps=1e-12,
        mask_fill=-10000.0,
    ),
    Family(
        "fused-qkv-per-head",
        "Fused qkv_layer encoder (q, k, v chunked per head)",
        "the encoder tutorial whose qkv_layer output is viewed as (heads, 3·head_dim)",
        QKV_PER_HEAD,
        ("qkv_layer", "linear_layer"),
        layer_norm_eps=1e-6,
    ),
)


def detect_family(state: dict[str, torch.Tensor]) -> Family | None:
    """The first family whose attention weights appear in ``state``, else None."""
    for family in FAMILIES:
        marker, partner = _marker(family), f"{family.names[-1]}.weight"
        for key in state:
            if key == marker or key.endswith("." + marker):
                # w_q is shared by two families: the output projection's name (w_o, w_concat) decides
                if key[: len(key) - len(marker)] + partner in state:
                    return family
    return None


def _marker(family: Family) -> str:
    if family.layout == IN_PROJ:
        return "in_proj_weight"
    return f"{family.names[0]}.weight"


def what_we_look_for() -> str:
    """One line per family: the names that identify it (for 'unknown architecture' messages)."""
    return "; ".join(f"{f.title}: '…{_marker(f)}'" for f in FAMILIES)


@dataclass(frozen=True)
class AttentionSource:
    """One attention module's tensors as the checkpoint stores them (``tensors`` by its own
    names, relative to the module), and which keys of the layer it used."""

    family: Family
    path: str
    tensors: dict[str, torch.Tensor]
    used: tuple[str, ...]

    @property
    def d_model(self) -> int:
        return next(iter(self.tensors.values())).shape[1]  # the first is always a (·, D) weight

    def ours(self, num_heads: int) -> dict[str, torch.Tensor]:
        """Our names -> tensors: ``w_q.weight`` (D, D), ``w_q.bias`` (D,), … ``w_o.bias``."""
        if self.family.layout == SEPARATE:
            out = {}
            for role, name in zip(ROLES, self.family.names):
                out[f"{role}.weight"] = self.tensors[f"{name}.weight"]
                out[f"{role}.bias"] = self._bias(f"{name}.bias", out[f"{role}.weight"].shape[0])
            return out
        if self.family.layout == IN_PROJ:
            return self._split_in_proj()
        return self._split_per_head(num_heads)

    def _bias(self, key: str, size: int) -> torch.Tensor:
        """A Linear saved with bias=False behaves as one with a zero bias."""
        return self.tensors.get(key, torch.zeros(size))

    def _split_in_proj(self) -> dict[str, torch.Tensor]:
        weight = self.tensors["in_proj_weight"]  # (3D, D) rows [q; k; v]
        d = weight.shape[1]
        bias = self._bias("in_proj_bias", 3 * d)
        out = {}
        for i, role in enumerate(ROLES[:3]):
            out[f"{role}.weight"], out[f"{role}.bias"] = weight[i * d : (i + 1) * d], bias[i * d : (i + 1) * d]
        out["w_o.weight"] = self.tensors["out_proj.weight"]
        out["w_o.bias"] = self._bias("out_proj.bias", d)
        return out

    def _split_per_head(self, num_heads: int) -> dict[str, torch.Tensor]:
        fused, proj = self.family.names
        weight = self.tensors[f"{fused}.weight"]  # (3D, D): row h·3d + c·d + i is part c (q, k, v) of head h
        d_model = weight.shape[1]
        if d_model % num_heads:
            raise CheckpointError(f"d_model ({d_model}) must be a multiple of the number of heads ({num_heads}).")
        head_dim = d_model // num_heads
        bias = self._bias(f"{fused}.bias", 3 * d_model)
        w = weight.reshape(num_heads, 3, head_dim, d_model)
        b = bias.reshape(num_heads, 3, head_dim)
        out = {}
        for c, role in enumerate(ROLES[:3]):  # rows head-major, as our split_heads reads them
            out[f"{role}.weight"] = w[:, c].reshape(d_model, d_model).contiguous()
            out[f"{role}.bias"] = b[:, c].reshape(d_model).contiguous()
        out["w_o.weight"] = self.tensors[f"{proj}.weight"]
        out["w_o.bias"] = self._bias(f"{proj}.bias", d_model)
        return out


def find_attention(family: Family, layer: dict[str, torch.Tensor]) -> list[AttentionSource]:
    """The attention modules in one layer's tensors (keys relative to the layer), in name order."""
    found = []
    marker, partner = _marker(family), f"{family.names[-1]}.weight"
    for key in sorted(layer):
        path = key[: len(key) - len(marker)]
        if (key == marker or key.endswith("." + marker)) and path + partner in layer:
            found.append(_collect(family, layer, path))
    return found


def _collect(family: Family, layer: dict[str, torch.Tensor], path: str) -> AttentionSource:
    if family.layout == IN_PROJ:
        wanted = ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
        required = ["in_proj_weight", "out_proj.weight"]
    else:
        wanted = [f"{n}.{p}" for n in family.names for p in ("weight", "bias")]
        required = [f"{n}.weight" for n in family.names]
    missing = [path + r for r in required if path + r not in layer]
    if missing:
        raise CheckpointError(f"The attention module '{path.rstrip('.')}' lacks {', '.join(missing)}.")
    tensors = {w: layer[path + w] for w in wanted if path + w in layer}
    return AttentionSource(family, path, tensors, tuple(path + w for w in tensors))
