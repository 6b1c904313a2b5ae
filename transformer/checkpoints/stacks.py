"""Find the stacks of encoder and decoder layers in a state_dict and map each layer onto ours.

A stack is a prefix followed by layer numbers, e.g. ``encoder.encoder_layers.0.…``; a layer
with one attention module is an encoder layer, one with two (self, then cross) a decoder
layer. Inside a layer, besides attention there must be exactly two Linear layers (the
feed-forward network) and one LayerNorm per sublayer; they are told apart by shape, by
name hints and by natural name order (``norm1`` < ``norm2``, ``linear1`` < ``linear2``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

import torch

from .errors import CheckpointError
from .families import AttentionSource, Family, find_attention

NORM_PARAMS = ({"weight", "bias"}, {"gamma", "beta"}, {"a_2", "b_2"})
CROSS_HINTS = ("cross", "enc_dec", "encdec", "src_attn", "encoder_attn", "multihead_attn", "context", "memory")
FFN_HINTS = ("ffn", "feed", "ff_", "mlp", "final")
SELF_HINTS = ("self", "attn", "attention")
_LAYER_KEY = re.compile(r"^((?:[^.]+\.)*?)(\d+)\.(.+)$")


def natural_key(name: str) -> list:
    """'norm10' after 'norm2': digits compare as numbers."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


@dataclass(frozen=True)
class LayerMap:
    """One layer in our names: ``attention`` our module name ('self_attn', 'cross_attn') -> source;
    ``fixed`` our tensor names (ffn.*, *_block.norm.*) -> tensors; ``norm_style`` torch | std_eps."""

    attention: dict[str, AttentionSource]
    fixed: dict[str, torch.Tensor]
    norm_style: str
    d_ff: int

    def ours(self, num_heads: int) -> dict[str, torch.Tensor]:
        out = dict(self.fixed)
        for module, source in self.attention.items():
            out.update({f"{module}.{k}": v for k, v in source.ours(num_heads).items()})
        return out


@dataclass(frozen=True)
class Stack:
    """prefix: e.g. 'encoder.layers.'; keys: every state key it used."""

    prefix: str
    layers: list[LayerMap]
    is_decoder: bool
    keys: frozenset[str]

    @property
    def root(self) -> str:
        """'encoder.' for 'encoder.layers.': where this stack's final norm and embedding usually live."""
        parts = self.prefix.rstrip(".").split(".")
        return ".".join(parts[:-1]) + "." if len(parts) > 1 else ""


def find_stacks(state: dict[str, torch.Tensor], family: Family) -> list[Stack]:
    """Every prefix whose numbered children hold attention weights of ``family``."""
    groups: dict[str, dict[int, dict[str, torch.Tensor]]] = defaultdict(lambda: defaultdict(dict))
    for key, tensor in state.items():
        match = _LAYER_KEY.match(key)
        if match:
            groups[match.group(1)][int(match.group(2))][match.group(3)] = tensor
    stacks = []
    for prefix, layers in groups.items():
        if not any(find_attention(family, layer) for layer in layers.values()):
            continue
        if sorted(layers) != list(range(len(layers))):
            raise CheckpointError(f"The layers under '{prefix}' are numbered {sorted(layers)}; expected 0 .. N-1.")
        mapped = [map_layer(family, layers[i], f"{prefix}{i}.") for i in range(len(layers))]
        decoder = {len(m.attention) for m in mapped}
        if len(decoder) != 1:
            raise CheckpointError(f"The layers under '{prefix}' differ in how many attention modules they have.")
        keys = frozenset(f"{prefix}{i}.{rest}" for i in layers for rest in layers[i])
        stacks.append(Stack(prefix, mapped, decoder == {2}, keys))
    return stacks


def map_layer(family: Family, layer: dict[str, torch.Tensor], where: str) -> LayerMap:
    """One layer's tensors (keys relative to ``where``) -> :class:`LayerMap`."""
    sources = find_attention(family, layer)
    if len(sources) not in (1, 2):
        raise CheckpointError(f"Layer '{where}' has {len(sources)} attention modules; expected 1 or 2.")
    used = {k for s in sources for k in s.used}
    modules = _modules({k: v for k, v in layer.items() if k not in used})
    d_model = sources[0].d_model
    norms, linears, other = _classify(modules, d_model)
    if other:
        raise CheckpointError(f"Layer '{where}' has weights we cannot place: {', '.join(where + m for m in other)}.")
    decoder = len(sources) == 2
    if len(linears) != 2 or len(norms) != (3 if decoder else 2):
        raise CheckpointError(
            f"Layer '{where}' has {len(linears)} Linear layers and {len(norms)} LayerNorms besides attention; "
            f"expected 2 (the feed-forward network) and {3 if decoder else 2}."
        )
    attention = dict(zip(("self_attn", "cross_attn"), _by_role(sources, decoder)))
    blocks = ("self_block", "cross_block", "ffn_block") if decoder else ("attn_block", "ffn_block")
    fixed, styles = {}, set()
    for block, name in zip(blocks, _order_norms(list(norms), decoder)):
        weight, bias, style = _norm_params(modules[name])
        fixed[f"{block}.norm.weight"], fixed[f"{block}.norm.bias"] = weight, bias
        styles.add(style)
    if len(styles) > 1:
        raise CheckpointError(f"Layer '{where}' mixes LayerNorm kinds (weight/bias and gamma/beta).")
    first, second = _order_ffn(modules, linears, d_model)
    for ours, name in (("linear1", first), ("linear2", second)):
        weight = modules[name]["weight"]
        fixed[f"ffn.{ours}.weight"] = weight
        fixed[f"ffn.{ours}.bias"] = modules[name].get("bias", torch.zeros(weight.shape[0]))
    return LayerMap(attention, fixed, styles.pop(), modules[first]["weight"].shape[0])


def _modules(tensors: dict[str, torch.Tensor]) -> dict[str, dict[str, torch.Tensor]]:
    """'ffn.linear1.weight' -> {'ffn.linear1': {'weight': …}}."""
    out: dict[str, dict[str, torch.Tensor]] = defaultdict(dict)
    for key, tensor in tensors.items():
        module, _, param = key.rpartition(".")
        out[module][param] = tensor
    return out


def _classify(modules: dict[str, dict[str, torch.Tensor]], d_model: int) -> tuple[list[str], list[str], list[str]]:
    """Module names split into LayerNorms, Linear layers and others."""
    norms, linears, other = [], [], []
    for name, params in modules.items():
        names = set(params)
        if any(names == p for p in NORM_PARAMS) and all(t.shape == (d_model,) for t in params.values()):
            norms.append(name)
        elif names in ({"weight"}, {"weight", "bias"}) and params["weight"].dim() == 2:
            linears.append(name)
        else:
            other.append(name)
    return norms, linears, other


def _norm_params(params: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, str]:
    """(scale, shift, style): gamma/beta and a_2/b_2 LayerNorms of tutorials divide by (std + eps)."""
    if "weight" in params:
        return params["weight"], params["bias"], "torch"
    if "gamma" in params:
        return params["gamma"], params["beta"], "std_eps"
    return params["a_2"], params["b_2"], "std_eps"


def _role(name: str, decoder: bool) -> int | None:
    """0 self-attention sublayer, 1 cross-attention, 2 feed-forward; None when the name gives no hint."""
    lowered = name.lower()
    if decoder and any(h in lowered for h in CROSS_HINTS):
        return 1
    if any(h in lowered for h in FFN_HINTS):
        return 2
    if any(h in lowered for h in SELF_HINTS):
        return 0
    return None


def _order_norms(names: list[str], decoder: bool) -> list[str]:
    """By role when every name hints a different one, else in natural name order (norm1, norm2, …)."""
    roles = [_role(n, decoder) for n in names]
    if None not in roles and len(set(roles)) == len(roles):
        return [n for _, n in sorted(zip(roles, names))]
    return sorted(names, key=natural_key)


def _by_role(sources: list[AttentionSource], decoder: bool) -> list[AttentionSource]:
    """[self, cross]: the one whose name hints cross-attention goes second."""
    if not decoder:
        return sources
    cross = [s for s in sources if _role(s.path, True) == 1]
    if len(cross) == 1:
        return [s for s in sources if s is not cross[0]] + cross
    return sorted(sources, key=lambda s: natural_key(s.path))


def _order_ffn(modules: dict, linears: list[str], d_model: int) -> tuple[str, str]:
    """(linear1 D -> F, linear2 F -> D): by shape, or by name when F == D."""
    a, b = sorted(linears, key=natural_key)
    shape_a, shape_b = modules[a]["weight"].shape, modules[b]["weight"].shape
    if shape_a[1] == d_model and shape_b[0] == d_model and shape_a[0] == shape_b[1]:
        return a, b  # when d_ff == d_model both orders fit and the names decide
    if shape_b[1] == d_model and shape_a[0] == d_model and shape_b[0] == shape_a[1]:
        return b, a
    raise CheckpointError(
        f"The feed-forward layers {a} {tuple(shape_a)} and {b} {tuple(shape_b)} do not chain d_model -> d_ff -> d_model."
    )
