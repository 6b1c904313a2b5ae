"""The parts of a state_dict outside the layer stacks: token embeddings, positional tables,
final LayerNorms, the classifier head or the encoder-decoder's output layer.

Parts are recognised by shape first (a token embedding is (vocabulary, d_model) with no bias),
then by name (``emb``, ``tok``; ``pos``, ``pe``; ``src``/``tgt``), as tutorials name them freely.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import torch

from .errors import CheckpointError
from .findings import Finding
from .stacks import NORM_PARAMS, Stack, natural_key

POSITION_WORDS = {"pe", "pos", "position", "positions", "positional", "posenc"}
EMBEDDING_WORDS = {"tok", "token", "tokens", "word", "words", "wte", "embed", "embedding", "embeddings", "emb"}
SOURCE_WORDS = {"src", "source", "enc", "encoder", "input"}
TARGET_WORDS = {"tgt", "trg", "target", "dec", "decoder", "output"}


def _words(path: str) -> set[str]:
    return {w for w in re.split(r"[._]", path.lower()) if w}


def _is_embedding_name(path: str) -> bool:
    return any(w in EMBEDDING_WORDS or w.startswith("emb") for w in _words(path))


@dataclass(frozen=True)
class Module:
    """A group of tensors under one path, e.g. 'classifier.0' -> {'weight': …, 'bias': …}."""

    path: str
    params: dict[str, torch.Tensor]

    @property
    def keys(self) -> list[str]:
        return [f"{self.path}.{p}" if self.path else p for p in self.params]

    def is_linear(self) -> bool:
        return set(self.params) in ({"weight"}, {"weight", "bias"}) and self.params["weight"].dim() == 2

    def is_norm(self, d_model: int) -> bool:
        return any(set(self.params) == p for p in NORM_PARAMS) and all(
            t.shape == (d_model,) for t in self.params.values()
        )

    def describe(self) -> str:
        shapes = ", ".join(f"{p} {tuple(t.shape)}" for p, t in self.params.items())
        return f"{self.path or '(top level)'} [{shapes}]"


@dataclass
class Parts:
    """Found parts; sides are 'src' and 'tgt'. Tables are (L, D)."""

    embeddings: dict[str, Module] = field(default_factory=dict)
    tables: dict[str, tuple[str, torch.Tensor]] = field(default_factory=dict)
    final_norms: dict[str, Module] = field(default_factory=dict)
    linears: list[Module] = field(default_factory=list)
    others: list[Module] = field(default_factory=list)


def split_parts(state: dict[str, torch.Tensor], stacks: list[Stack], d_model: int) -> Parts:
    """Sort every tensor outside the stacks into a part (integer buffers are skipped)."""
    used = set().union(*(s.keys for s in stacks))
    grouped: dict[str, dict[str, torch.Tensor]] = {}
    for key, tensor in state.items():
        if key in used or not tensor.is_floating_point():
            continue
        path, _, param = key.rpartition(".")
        grouped.setdefault(path, {})[param] = tensor
    parts = Parts()
    roots = {("tgt" if s.is_decoder else "src"): s.root for s in stacks}
    for path in sorted(grouped, key=natural_key):
        _place(parts, Module(path, grouped[path]), d_model, roots)
    return parts


def _place(parts: Parts, module: Module, d_model: int, roots: dict[str, str]) -> None:
    table = _positional_table(module, d_model)
    if table is not None:
        parts.tables.setdefault(side_of(module.path, roots) or "shared", (module.keys[0], table))
    elif set(module.params) == {"weight"} and module.params["weight"].dim() == 2 and _is_embedding_name(module.path):
        if module.params["weight"].shape[1] != d_model:
            raise CheckpointError(f"The embedding {module.describe()} does not have d_model = {d_model} columns.")
        parts.embeddings.setdefault(side_of(module.path, roots) or "shared", module)
    elif module.is_norm(d_model) and _final_norm_side(module.path, roots) is not None:
        side = _final_norm_side(module.path, roots)
        if side in parts.final_norms:
            parts.others.append(module)
        else:
            parts.final_norms[side] = module
    elif module.is_linear():
        parts.linears.append(module)
    else:
        parts.others.append(module)


def _positional_table(module: Module, d_model: int) -> torch.Tensor | None:
    """A (L, D) table from a saved 'pe' buffer ((1, L, D), (L, 1, D) or (L, D)) or a position embedding."""
    if len(module.params) != 1:
        return None
    name, tensor = next(iter(module.params.items()))
    if not (_words(module.path) | _words(name)) & POSITION_WORDS:
        return None
    if tensor.dim() == 3 and 1 in tensor.shape[:2]:
        tensor = tensor.reshape(-1, tensor.shape[-1])
    if tensor.dim() != 2 or tensor.shape[1] != d_model:
        return None
    return tensor


def side_of(path: str, roots: dict[str, str]) -> str | None:
    """'src' or 'tgt' from where the path lives (under the encoder's or decoder's root) or its words."""
    for side, root in roots.items():
        if root and path.startswith(root) and not any(r and r != root and path.startswith(r) for r in roots.values()):
            return side
    words = _words(path)
    source, target = bool(words & SOURCE_WORDS), bool(words & TARGET_WORDS)
    if source != target:
        return "src" if source else "tgt"
    return None


def _final_norm_side(path: str, roots: dict[str, str]) -> str | None:
    """A LayerNorm right under a stack's root (e.g. 'encoder.norm') is that stack's final norm."""
    for side, root in roots.items():
        rest = path[len(root) :] if path.startswith(root) else None
        if rest is not None and "." not in rest:
            return side
    return None


@dataclass(frozen=True)
class Head:
    """A chain of Linear layers: sizes [in, hidden…, out]; layers as (path, weight, bias)."""

    layers: list[tuple[str, torch.Tensor, torch.Tensor]]

    @property
    def sizes(self) -> list[int]:
        return [self.layers[0][1].shape[1]] + [w.shape[0] for _, w, _ in self.layers]

    @property
    def num_outputs(self) -> int:
        return self.sizes[-1]

    def finding(self) -> Finding:
        """What the head is: Linear or MLP, its sizes, and how its outputs become probabilities."""
        kind = "head_linear" if len(self.layers) == 1 else "head_mlp"
        outputs = "sigmoid" if self.num_outputs == 1 else "softmax"
        sizes = " → ".join(map(str, self.sizes))
        return Finding(f"{kind}_{outputs}", {"layers": len(self.layers), "sizes": sizes, "outputs": self.num_outputs})


def chain_head(linears: list[Module], d_model: int) -> tuple[Head | None, Finding | None]:
    """The classifier head from the Linear layers left over, or (None, why it cannot be mapped)."""
    if not linears:
        return None, Finding("head_missing")
    layers = sorted(linears, key=lambda m: natural_key(m.path))
    width = layers[0].params["weight"].shape[1]
    if width not in (d_model, 2 * d_model):
        return None, Finding("head_first_width", {"layer": layers[0].describe(), "d_model": d_model})
    out = []
    for module in layers:
        weight = module.params["weight"]
        if weight.shape[1] != width:
            return None, Finding("head_chain", {"layer": module.describe(), "width": width})
        out.append((module.path, weight, module.params.get("bias", torch.zeros(weight.shape[0]))))
        width = weight.shape[0]
    return Head(out), None
