"""What the weights cannot tell, why it matters, its default, and the user's answers.

An answer comes from :class:`ImportOptions` first, then from values saved in the checkpoint
beside the weights (e.g. ``{"model": ..., "num_heads": 4}``), then from the family's default.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.config import LIMITS
from ..core.tokenizer import Vocab
from .detect import Detection
from .errors import CheckpointError
from .options import ImportOptions

FILLS = (-1e9, -1e10, -10000.0)
# the allowed answers for number questions: one table for the CLI's checks and the page's widgets
RANGES: dict[str, tuple[float, float]] = {"max_len": (1, LIMITS["max_len"]), "pe_base": (1.01, 1e9)}

QUESTIONS: dict[str, tuple[str, str]] = {
    "num_heads": (
        "Number of attention heads",
        "The weights are the same for any number of heads; only how each "
        "projection is cut into heads differs, so use the number you trained with.",
    ),
    "pooling": (
        "Pooling",
        "Your head reads one vector per sentence; how your code made it from the token vectors "
        "(their mean, the first token's, the maximum) is not stored in the weights.",
    ),
    "label_names": ("Class names", "The weights store how many outputs the head has, not what they mean."),
    "scale_embedding": (
        "Embeddings × √d_model",
        "Some code multiplies token embeddings by √d_model before adding "
        "positions (the paper and PyTorch's tutorials do; the course notebooks do not).",
    ),
    "pad_id": (
        "Padding id",
        "Padded positions are masked out of attention; the id is the vocabulary's '<pad>' "
        "unless your code used another one.",
    ),
    "mask_fill": (
        "Score of blocked cells",
        "What your code wrote into masked scores before softmax (-1e9, the "
        "course notebook's -1e10, or -10000). Any of them gives blocked cells a weight of 0.",
    ),
    "norm_first": (
        "LayerNorm before each sublayer (norm_first)",
        "nn.TransformerEncoderLayer(norm_first=True) "
        "normalises before attention and feed-forward; the default (False) after.",
    ),
    "activation": (
        "Feed-forward activation",
        "nn.TransformerEncoderLayer uses ReLU unless you passed activation='gelu'.",
    ),
    "positional": (
        "Positional encoding",
        "No positional table is saved. Did your code add the sinusoid of the paper to the embeddings, or "
        "nothing at all (as the course's nn.Transformer example does)? Attention differs completely.",
    ),
    "pe_base": (
        "Sinusoid base",
        "The 10000 in sin(pos / 10000^(2i/d)); change it only if your code used another number.",
    ),
    "max_len": (
        "Maximum length (tokens)",
        "No positional table is saved, so the longest input your model was "
        "built for is not known; the sinusoid formula works for any length.",
    ),
}

HINT_NAMES = {
    "num_heads": ("num_heads", "n_heads", "nhead", "n_head", "heads", "num_attention_heads"),
    "pooling": ("pooling", "pool"),
    "label_names": ("label_names", "class_names", "classes", "labels"),
    "scale_embedding": ("scale_embedding",),
    "pad_id": ("pad_id", "pad_idx", "PAD_IDX", "padding_idx", "src_pad_idx"),
    "mask_fill": ("mask_fill",),
    "norm_first": ("norm_first", "pre_norm", "prenorm"),
    "activation": ("activation",),
    "positional": ("positional",),
    "pe_base": ("pe_base",),
    "max_len": ("max_len", "max_length", "max_seq_len", "max_seq_length", "MAX_SEQ_LENGTH", "sequence_length"),
}


def asked(d: Detection) -> list[str]:
    """The questions this checkpoint needs answered, in the order the page shows them."""
    keys = ["num_heads"]
    if d.head is not None:
        if d.head.sizes[0] == d.d_model:
            keys.append("pooling")
        keys.append("label_names")
    keys += ["scale_embedding", "pad_id", "mask_fill"]
    if d.family.asks_norm_first:
        keys.append("norm_first")
    if d.family.asks_activation:
        keys.append("activation")
    if d.positional.max_len is None:
        keys += ["positional", "pe_base", "max_len"]
    return keys


def defaults(d: Detection) -> dict[str, object]:
    """A default answer to every question (saved values first); pad_id None means the vocabulary's."""
    out = {
        "num_heads": _default_heads(d.d_model),
        "pooling": "mean_max" if d.head is not None and d.head.sizes[0] == 2 * d.d_model else "mean",
        "label_names": _default_labels(d.head.num_outputs if d.head else 2),
        "scale_embedding": d.family.scale_embedding,
        "pad_id": None,
        "mask_fill": d.family.mask_fill,
        "norm_first": False,
        "activation": "relu",
        "positional": d.family.positional if d.positional.max_len is None else d.positional.kind,
        "pe_base": 10000.0,
        "max_len": d.positional.max_len or 512,
    }
    for key, value in _saved(d).items():
        out[key] = value
    return out


def sources(d: Detection, options: ImportOptions) -> dict[str, str]:
    """Where each answer comes from: 'user' (options), 'checkpoint' (saved beside the weights or
    read from them) or 'family default'."""
    saved = _saved(d)
    read = {"positional", "max_len"} if d.positional.max_len is not None else set()
    out = {}
    for key in QUESTIONS:
        if getattr(options, key, None) is not None:
            out[key] = "user"
        elif key in saved or key in read:
            out[key] = "checkpoint"
        else:
            out[key] = "family default"
    return out


def _default_heads(d_model: int) -> int:
    """8 as in the paper when it divides d_model, else the largest divisor up to 8."""
    return max(h for h in range(1, 9) if d_model % h == 0)


def _default_labels(outputs: int) -> tuple[str, ...]:
    # binary heads are most often sentiment (the course's IMDB task); the user can rename them
    return ("negative", "positive") if outputs <= 2 else tuple(f"class {i}" for i in range(outputs))


def _saved(d: Detection) -> dict[str, object]:
    """Answers found among the values saved beside the weights, when of the right type."""
    found = {}
    for key, names in HINT_NAMES.items():
        for name in names:
            value = d.raw.hints.get(name)
            if value is not None and _valid(key, value):
                found[key] = tuple(value) if key == "label_names" else value
                break
    return found


def _valid(key: str, value: object) -> bool:
    if key in ("num_heads", "max_len", "pad_id"):
        return type(value) is int and value >= (0 if key == "pad_id" else 1)
    if key in ("scale_embedding", "norm_first"):
        return isinstance(value, bool)
    if key == "mask_fill":
        return isinstance(value, int | float) and not isinstance(value, bool) and value < 0
    if key == "label_names":
        return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
    if key == "pooling":
        return value in ("mean", "first", "max", "mean_max")
    if key == "positional":
        return value in ("none", "sinusoidal")
    if key == "pe_base":
        return isinstance(value, int | float) and not isinstance(value, bool) and value > 1
    return value in ("relu", "gelu")


@dataclass(frozen=True)
class Answers:
    num_heads: int
    pooling: str
    label_names: tuple[str, ...]
    scale_embedding: bool
    pad_id: int
    mask_fill: float
    norm_first: bool
    activation: str
    positional: str
    pe_base: float
    max_len: int
    sources: dict[str, str]

    def assumptions(self, keys: list[str]) -> dict[str, dict]:
        """{key: {"value", "source"}} for ``keys``: what ``LoadedModel.assumptions`` lists."""
        return {k: {"value": _plain(getattr(self, k)), "source": self.sources[k]} for k in keys}


def _plain(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


def resolve(d: Detection, options: ImportOptions, vocab: Vocab) -> Answers:
    """The answers to use: options, else saved values, else defaults; checked, with messages."""
    values = defaults(d)
    origin = sources(d, options)
    for key in QUESTIONS:
        given = getattr(options, key, None)
        if given is not None:
            values[key] = tuple(given) if key == "label_names" else given
    if values["pad_id"] is None:
        values["pad_id"] = vocab.pad_id
        origin["pad_id"] = "vocabulary"
    answers = Answers(**values, sources=origin)
    check_answers(d, answers)
    return answers


def range_problem(key: str, value: float) -> str | None:
    """The message when ``value`` for ``key`` (a question in :data:`RANGES`) is outside this app's
    range, else None: the one rule for the CLI, the page's check of a file and its widgets."""
    low, high = RANGES[key]
    if key == "max_len" and value < low:
        return "The maximum length must be at least 1."
    if key == "max_len" and value > high:
        return f"The maximum length {value:,} is beyond this app's limit of {high:,}."
    if key == "pe_base" and not low <= value <= high:
        return f"The sinusoid base must be between {low:g} and {high:g}, not {value:g}."
    return None


def saved_cap_problem(d: Detection) -> str | None:
    """The message when a value saved in the file is beyond this app's caps (:func:`range_problem`):
    the file is refused, on the page as by ``inspect`` (which has no flag to answer it)."""
    for key, value in _saved(d).items():
        problem = range_problem(key, value) if key in RANGES else None
        if problem is not None:
            return problem
    return None


def saved_problem(d: Detection, pad_id: int) -> str | None:
    """What ``inspect`` says about this checkpoint when no flag is given (its saved values and the
    defaults, ``pad_id`` the vocabulary's), or None when they pass: the same check, for the page
    to show before anything is asked."""
    values = defaults(d)
    if values["pad_id"] is None:
        values["pad_id"] = pad_id
    try:
        check_answers(d, Answers(**values, sources={}))
    except CheckpointError as err:
        return str(err)
    return None


def check_answers(d: Detection, a: Answers) -> None:
    """Raise CheckpointError (what is wrong, what to choose) for answers beyond this app's caps
    (:func:`range_problem`, checked first) or that do not fit the weights."""
    for key in RANGES:
        problem = range_problem(key, getattr(a, key))
        if problem is not None:
            raise CheckpointError(problem)
    if a.num_heads < 1 or d.d_model % a.num_heads:
        divisors = [h for h in range(1, d.d_model + 1) if d.d_model % h == 0 and h <= 64]
        raise CheckpointError(f"{a.num_heads} heads do not divide d_model = {d.d_model}; choose one of {divisors}.")
    if not 0 <= a.pad_id < d.vocab_size:
        raise CheckpointError(f"The padding id {a.pad_id} is outside the vocabulary (0 .. {d.vocab_size - 1}).")
    if d.positional.max_len is not None and a.max_len > d.positional.max_len:
        raise CheckpointError(
            f"The saved positional table has {d.positional.max_len} positions; "
            f"the maximum length cannot be {a.max_len}."
        )
    if a.positional not in ("none", "sinusoidal", "learned") or (a.positional == "learned" and not d.positional.tables):
        raise CheckpointError(f"Positional encoding must be none or sinusoidal, not {a.positional!r}.")
    if a.activation not in ("relu", "gelu"):
        raise CheckpointError(f"The activation must be relu or gelu, not {a.activation!r}.")
    if d.head is not None:
        _check_head_answers(d, a)


def _check_head_answers(d: Detection, a: Answers) -> None:
    wide = d.head.sizes[0] == 2 * d.d_model
    if wide and a.pooling != "mean_max":
        raise CheckpointError(
            f"The head takes {d.head.sizes[0]} = 2 × d_model inputs: that is mean and max "
            "pooling side by side (mean_max); other poolings do not fit."
        )
    if not wide and a.pooling not in ("mean", "first", "max"):
        raise CheckpointError(f"Pooling must be mean, first or max for this head, not {a.pooling!r}.")
    wanted = 2 if d.head.num_outputs == 1 else d.head.num_outputs
    if len(a.label_names) != wanted or len(set(a.label_names)) != wanted or not all(n.strip() for n in a.label_names):
        raise CheckpointError(
            f"The head has {d.head.num_outputs} output(s): give {wanted} different class names"
            f"{' (for p < 0.5 and p ≥ 0.5)' if d.head.num_outputs == 1 else ''}."
        )
