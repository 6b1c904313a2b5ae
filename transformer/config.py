"""Model configuration: one frozen dataclass, saved beside the weights and used to rebuild the model."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

MODEL_KINDS = ("classifier", "encoder-decoder")
POOLINGS = ("mean", "max", "mean_max", "first", "cls")
POSITIONALS = ("sinusoidal", "learned", "none")
NORM_STYLES = ("torch", "std_eps")
ACTIVATIONS = ("relu", "gelu")


@dataclass(frozen=True)
class ModelConfig:
    """Everything needed to rebuild a model; stored as ``config.json`` (see DESIGN.md).

    ``norm_style="std_eps"`` is the LayerNorm that divides by (std + eps), as some
    tutorial code does; ``"torch"`` divides by sqrt(var + eps) like ``nn.LayerNorm``.
    ``mask_fill`` is the score given to blocked cells before softmax (notebooks use
    -1e9 or -1e10; both give the same weights: exactly zero after our re-masking).
    """

    kind: str = "classifier"
    vocab_size: int = 1000
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2
    d_ff: int = 256
    max_len: int = 512
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation: str = "relu"
    positional: str = "sinusoidal"
    pe_base: float = 10000.0
    scale_embedding: bool = False
    norm_first: bool = False
    norm_style: str = "torch"
    layer_norm_eps: float = 1e-5
    final_norm: bool = False
    qkv_bias: bool = True
    mask_fill: float = -1e9
    pad_id: int = 1
    # classifier
    pooling: str = "mean"
    add_cls_token: bool = False
    head_hidden: tuple[int, ...] = ()
    label_names: tuple[str, ...] = ("negative", "positive")
    single_logit: bool = False
    has_head: bool = True  # False: an imported encoder whose head could not be mapped (logits are None)
    # encoder-decoder
    num_decoder_layers: int = 0
    target_vocab_size: int = 0
    target_pad_id: int = 1
    bos_id: int = 2
    eos_id: int = 3
    tie_output_embedding: bool = False
    # inference
    allow_reduced_precision: bool = True
    tokenizer: str = "basic_english"
    default_max_tokens: int = 0  # suggested truncation for inference (0: max_len), chosen on validation
    temperature: float = 1.0  # softmax(logits / T) calibrates the probabilities; 1.0: not calibrated

    def __post_init__(self) -> None:
        _check_choice("kind", self.kind, MODEL_KINDS)
        _check_choice("pooling", self.pooling, POOLINGS)
        _check_choice("positional", self.positional, POSITIONALS)
        _check_choice("norm_style", self.norm_style, NORM_STYLES)
        _check_choice("activation", self.activation, ACTIVATIONS)
        if self.d_model <= 0 or self.num_heads <= 0 or self.d_model % self.num_heads:
            raise ValueError(f"d_model ({self.d_model}) must be a positive multiple of num_heads ({self.num_heads}).")
        if self.vocab_size <= 0 or self.max_len <= 0 or self.num_layers < 0:
            raise ValueError("vocab_size and max_len must be positive, num_layers non-negative.")
        if self.kind == "classifier" and not self.single_logit and len(self.label_names) < 2:
            raise ValueError("A softmax classifier needs at least two label_names.")
        if self.pooling == "cls" and not self.add_cls_token:
            raise ValueError("pooling='cls' needs add_cls_token=True.")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.num_heads

    @property
    def num_labels(self) -> int:
        return 1 if self.single_logit else len(self.label_names)

    def replace(self, **changes) -> ModelConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ModelConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"Unknown config keys: {', '.join(unknown)}.")
        values = dict(data)
        for key in ("head_hidden", "label_names"):
            if key in values:
                values[key] = tuple(values[key])
        return cls(**values)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> ModelConfig:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}.")
