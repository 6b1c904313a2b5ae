"""Model configuration: one frozen dataclass, saved beside the weights and used to rebuild the model."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Self

MODEL_KINDS = ("classifier", "encoder-decoder", "language-model", "masked-lm")
POOLINGS = ("mean", "max", "mean_max", "first", "cls")
# "sinusoidal_halves": the same sinusoids with every sine first, then every cosine (Marian's layout)
# "rotary": no table added to the embedding; each head's queries and keys are rotated by their position
POSITIONALS = ("sinusoidal", "learned", "none", "sinusoidal_halves", "rotary")
# "rms": RMSNorm, x / sqrt(mean(x²) + eps) times a weight, no mean, no bias (Llama)
NORM_STYLES = ("torch", "std_eps", "rms")
# how rotary pairs a head's dimensions: "halves" rotates (x_i, x_{i+d/2}) (Llama, NeoX), "interleaved"
# rotates (x_2i, x_2i+1) (GPT-J, RoFormer)
ROTARY_STYLES = ("halves", "interleaved")
# silu: x·sigmoid(x), "swish" in Marian configs; "gelu_tanh": GELU's tanh approximation (GPT-2's "gelu_new");
# "gelu" is the exact erf form
ACTIVATIONS = ("relu", "gelu", "silu", "gelu_tanh")
HEAD_ACTIVATIONS = ("relu", "tanh", "gelu")  # between a classifier head's hidden and output layers
TARGET_TOKENIZERS = ("basic_english", "characters")
# "wordpiece": the pieces of the tokenizer.json saved beside the model; "byte_bpe": a language model's byte-level BPE;
# "digits": basic_english words cut into single digits, letter runs and single symbols ("2021-03-03" -> 2 0 2 1 - ...)
TOKENIZERS = ("basic_english", "wordpiece", "byte_bpe", "digits")
# Caps applied to every config before anything is built (a config from an upload is untrusted):
# far above the models this app shows, far below sizes that take gigabytes or minutes to build.
LIMITS = {
    "d_model": 4096,
    "num_heads": 256,
    "num_kv_heads": 256,
    "num_layers": 64,
    "num_decoder_layers": 64,
    "d_ff": 16384,
    "max_len": 16384,
    "vocab_size": 1_000_000,
    "target_vocab_size": 1_000_000,
    "embedding_dim": 4096,
    "type_vocab_size": 1024,
    "position_offset": 1024,
    "attention_head_dim": 4096,
}
MAX_PARAMETERS = 200_000_000
MAX_CONFIG_BYTES = 1_000_000  # a config.json is a few kB


# The encoder stack's settings, shared by every model family (text models here, ViTs in transformer.vision).
LAYER_FIELDS = (
    "d_model", "num_heads", "num_layers", "d_ff", "dropout", "attention_dropout",
    "activation", "norm_first", "layer_norm_eps", "qkv_bias",
)  # fmt: skip


@dataclass(frozen=True)
class BaseConfig:
    """What every model config shares: its kind, its labels, and the stack of layers (sizes, dropout,
    activation, norm placement) with their checks. ``ModelConfig`` and ``VisionConfig`` extend it;
    each keeps its own defaults and writes the same ``config.json`` keys as before (a field that a
    family declares again keeps its default there)."""

    kind: str = "classifier"
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2
    d_ff: int = 256
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation: str = "relu"
    norm_first: bool = False
    final_norm: bool = False
    layer_norm_eps: float = 1e-5
    qkv_bias: bool = True
    label_names: tuple[str, ...] = ("negative", "positive")

    def __post_init__(self) -> None:
        _check_choice("activation", self.activation, ACTIVATIONS)
        if self.d_model <= 0 or self.num_heads <= 0 or self.d_model % self.num_heads:
            raise ValueError(f"d_model ({self.d_model}) must be a positive multiple of num_heads ({self.num_heads}).")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.num_heads

    def layer_settings(self) -> dict:
        """The fields that build the stack of layers (``LAYER_FIELDS``), by name."""
        return {name: getattr(self, name) for name in LAYER_FIELDS}

    def replace(self, **changes) -> Self:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")


@dataclass(frozen=True)
class ModelConfig(BaseConfig):
    """Everything needed to rebuild a model; stored as ``config.json`` (see DESIGN.md).

    ``norm_style="std_eps"`` is the LayerNorm that divides by (std + eps), as some
    tutorial code does; ``"torch"`` divides by sqrt(var + eps) like ``nn.LayerNorm``.
    ``mask_fill`` is the score given to blocked cells before softmax (notebooks use
    -1e9 or -1e10; both give the same weights: exactly zero after our re-masking).
    """

    vocab_size: int = 1000
    max_len: int = 512
    positional: str = "sinusoidal"
    pe_base: float = 10000.0
    scale_embedding: bool = False
    norm_style: str = "torch"
    mask_fill: float = -1e9
    pad_id: int = 1
    # classifier
    pooling: str = "mean"
    add_cls_token: bool = False
    head_hidden: tuple[int, ...] = ()
    single_logit: bool = False
    has_head: bool = True  # False: an imported encoder whose head could not be mapped (logits are None)
    # encoder-decoder
    num_decoder_layers: int = 0
    target_vocab_size: int = 0
    target_pad_id: int = 1
    bos_id: int | None = 2  # None: the target vocabulary has no start token (teacher-forced input as given)
    eos_id: int | None = 3
    tie_output_embedding: bool = False
    # inference: on CUDA, bfloat16/float16 autocast only where a config opts in; float32 gives the CPU's
    # numbers within 1e-4 (measured: bfloat16 moved attention weights by up to 0.01)
    allow_reduced_precision: bool = False
    tokenizer: str = "basic_english"
    target_tokenizer: str = "basic_english"  # "characters": a target text is read one character at a time
    default_max_tokens: int = 0  # suggested truncation for inference (0: max_len), chosen on validation
    temperature: float = 1.0  # softmax(logits / T) calibrates the probabilities; 1.0: not calibrated
    # imported encoders (Hugging Face BERT family); the defaults leave every other model as it was
    embedding_dim: int = 0  # width of the embedding tables when not d_model (ELECTRA): projected to d_model
    type_vocab_size: int = 0  # rows of the segment (token type) table; its row 0 is added to every token
    embedding_norm: bool = False  # LayerNorm over the summed embeddings before the first layer
    position_offset: int = 0  # the first token reads this row of the learned positions (RoBERTa: padding_idx + 1)
    head_activation: str = "relu"  # between the head's layers: relu, tanh (BERT's pooler), gelu (ELECTRA)
    # decoder layers of the Llama family; the defaults leave every other model as it was
    rotary_style: str = "halves"  # with positional "rotary": which dimensions rotate together (ROTARY_STYLES)
    rotary_fraction: float = 1.0  # the share of each head's dimensions that rotate (the first ones); base: pe_base
    num_kv_heads: int = 0  # key/value heads shared by groups of query heads (grouped-query attention); 0: num_heads
    gated_ffn: bool = False  # feed-forward down(act(gate(x)) * up(x)); with activation "silu" it is SwiGLU
    out_bias: bool = True  # a bias on the attention output projection w_o (only where qkv_bias is also on)
    ffn_bias: bool = True  # biases on the feed-forward layers
    # local layers of a decoder-only model: the layers listed (0-based) see only the last ``local_window``
    # keys, themselves included (a sliding window, as Mistral's layers and Gemma's local layers); 0: none
    local_window: int = 0
    local_layers: tuple[int, ...] = ()
    # Gemma 2/3's layers; the defaults leave every other model as it was
    local_pe_base: float = 0.0  # rotary base of the local layers (0: pe_base, as the other layers)
    attention_head_dim: int = 0  # each head's width when it is not d_model / num_heads (Gemma 3 270M: 256 of 640)
    qk_norm: bool = False  # a norm (norm_style, width head_dim) on each head's queries and keys, before rotary
    sublayer_post_norm: bool = False  # pre-norm layers: a second norm on each sublayer's output before the sum
    # the token table as int8 values with a float32 scale per block of 32 (a Q8_0 tensor's exact values), rows
    # dequantised when read; a tied output layer reads it a group of rows at a time (core/packed.py)
    packed_embedding: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_choice("kind", self.kind, MODEL_KINDS)
        _check_choice("pooling", self.pooling, POOLINGS)
        _check_choice("positional", self.positional, POSITIONALS)
        _check_choice("norm_style", self.norm_style, NORM_STYLES)
        _check_choice("head_activation", self.head_activation, HEAD_ACTIVATIONS)
        _check_choice("target_tokenizer", self.target_tokenizer, TARGET_TOKENIZERS)
        _check_choice("tokenizer", self.tokenizer, TOKENIZERS)
        _check_choice("rotary_style", self.rotary_style, ROTARY_STYLES)
        self._check_decoder_options()
        if self.vocab_size <= 0 or self.max_len <= 0 or self.num_layers < 0:
            raise ValueError("vocab_size and max_len must be positive, num_layers non-negative.")
        if self.kind == "classifier" and not self.single_logit and len(self.label_names) < 2:
            raise ValueError("A softmax classifier needs at least two label_names.")
        if self.pooling == "cls" and not self.add_cls_token:
            raise ValueError("pooling='cls' needs add_cls_token=True.")

    def _check_decoder_options(self) -> None:
        if self.local_layers and (self.kind != "language-model" or self.local_window < 1):
            raise ValueError("local_layers needs a language model and a local_window of at least 1 key.")
        if self.local_window < 0 or any(not 0 <= i < self.num_layers for i in self.local_layers):
            raise ValueError(
                f"local_window must be >= 0 and local_layers within 0 .. {self.num_layers - 1} "
                f"(got {self.local_window} and {list(self.local_layers)})."
            )
        if self.attention_head_dim < 0 or self.local_pe_base < 0:
            raise ValueError("attention_head_dim and local_pe_base must not be negative.")
        if self.sublayer_post_norm and not self.norm_first:
            raise ValueError("sublayer_post_norm adds a second norm to pre-norm layers: it needs norm_first.")
        if self.packed_embedding and (self.embedding_dim or self.d_model) % 32:
            raise ValueError("packed_embedding keeps rows in blocks of 32 values: the width must be a multiple of 32.")
        kv = self.kv_heads
        if kv <= 0 or self.num_heads % kv:
            raise ValueError(f"num_heads ({self.num_heads}) must be a multiple of num_kv_heads ({kv}).")
        odd = self.positional == "rotary" and (self.rotary_dim <= 0 or self.rotary_dim % 2)
        if not 0.0 < self.rotary_fraction <= 1.0 or odd:
            raise ValueError(
                f"rotary_fraction ({self.rotary_fraction}) must be in (0, 1] and give an even number of "
                f"rotated dimensions per head (got {self.rotary_dim} of {self.head_dim})."
            )

    @property
    def head_dim(self) -> int:
        """Each head's width: ``attention_head_dim``, or d_model / num_heads when it is 0."""
        return self.attention_head_dim or self.d_model // self.num_heads

    @property
    def kv_heads(self) -> int:
        """Key/value heads: ``num_kv_heads``, or one per query head when it is 0."""
        return self.num_kv_heads or self.num_heads

    @property
    def rotary_dim(self) -> int:
        """How many of each head's dimensions rotary rotates (the first ones), as Hugging Face counts them."""
        return int(self.head_dim * self.rotary_fraction)

    @property
    def target_padding_id(self) -> int | None:
        """The target id whose keys the decoder blocks as padding; None when the decoder starts from
        the pad token itself (Marian: decoder_start_token_id = pad_token_id), which must stay visible."""
        return None if self.target_pad_id == self.bos_id else self.target_pad_id

    @property
    def num_labels(self) -> int:
        return 1 if self.single_logit else len(self.label_names)

    @classmethod
    def from_dict(cls, data: object) -> ModelConfig:
        """A config from parsed JSON; raises ValueError naming any key of the wrong type or
        beyond the caps in ``LIMITS`` (checked before anything is built)."""
        if not isinstance(data, dict):
            raise ValueError(f"A config must be a JSON object of settings, not a {type(data).__name__}.")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(map(str, set(data) - set(fields)))
        if unknown:
            raise ValueError(f"Unknown config keys: {', '.join(unknown[:10])}.")
        values = {key: _typed(key, value, fields[key].type) for key, value in data.items()}
        config = cls(**values)
        config.check_limits()
        return config

    def check_limits(self) -> None:
        """Raise ValueError when a size is beyond ``LIMITS`` or the parameters beyond ``MAX_PARAMETERS``."""
        for key, cap in LIMITS.items():
            value = getattr(self, key)
            if value > cap:
                raise ValueError(f"{key} = {value:,} is beyond this app's limit of {cap:,}.")
        if self.estimated_parameters() > MAX_PARAMETERS:
            raise ValueError(
                f"This config describes about {self.estimated_parameters() / 1e6:,.0f}M parameters; "
                f"this app takes at most {MAX_PARAMETERS / 1e6:.0f}M."
            )

    def estimated_parameters(self) -> int:
        """Embeddings, attention and feed-forward weights (biases and norms left out): an upper-bound guide to
        the memory, in float32 parameters."""
        d, f = self.d_model, self.d_ff
        attention = 2 * d * self.head_dim * (self.num_heads + self.kv_heads)
        ffn = (3 if self.gated_ffn else 2) * d * f
        layers = self.num_layers * (attention + ffn) + self.num_decoder_layers * (8 * d * d + 2 * d * f)
        # a packed token table (int8) takes the memory of a quarter of its values in float32
        tables = (self.vocab_size // (4 if self.packed_embedding else 1) + 2 * self.target_vocab_size) * d
        if self.positional == "learned":
            tables += 2 * self.max_len * d
        tables += self.type_vocab_size * d
        return layers + tables

    @classmethod
    def load(cls, path: str | Path) -> ModelConfig:
        """Read ``config.json``; raises ValueError (too large, not JSON, wrong types, beyond the caps)."""
        path = Path(path)
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise ValueError(f"{path.name} is {size:,} bytes; a config is a few kB (limit {MAX_CONFIG_BYTES:,}).")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, RecursionError, json.JSONDecodeError) as err:
            raise ValueError(f"{path.name} is not valid JSON ({type(err).__name__}).") from err
        return cls.from_dict(data)


_SCALARS = {"int": (int,), "float": (int, float), "bool": (bool,), "str": (str,)}


def _typed(key: str, value: object, annotation: str) -> object:
    """``value`` checked against the field's annotation (as written: 'int', 'int | None',
    'tuple[int, ...]', ...); lists become tuples. Raises ValueError saying what was expected."""
    optional = annotation.endswith(" | None")
    base = annotation.removesuffix(" | None")
    if value is None and optional:
        return None
    if base.startswith("tuple["):
        inner = _SCALARS[base[len("tuple[") :].split(",")[0]]
        if isinstance(value, list | tuple) and all(_is(v, inner) for v in value):
            return tuple(value)
        raise ValueError(f"Config key {key!r} must be a list of {base[6:].split(',')[0]}, not {value!r:.60}.")
    if not _is(value, _SCALARS[base]):
        raise ValueError(f"Config key {key!r} must be {base}, not {type(value).__name__} {value!r:.60}.")
    return float(value) if base == "float" else value


def _is(value: object, kinds: tuple[type, ...]) -> bool:
    # bool is an int in Python; a config's true/false is never a size
    return isinstance(value, kinds) and (bool in kinds or not isinstance(value, bool))


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}.")
