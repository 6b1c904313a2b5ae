"""What every family's importer shares: reading ``config.json`` values with messages that name them,
and building our state dict from a Hugging Face one while remembering where each tensor came from.

The mapping works on real tensors and on ``meta`` tensors alike (transposes, splits and slices only),
so a folder's shapes are checked from its headers before anything is read or built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from ..checkpoints.errors import CheckpointError
from ..core.config import ModelConfig
from .folder import CONFIG_FILE, DOWNLOAD_HINT

# Hugging Face hidden_act / activation names -> ours
ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}
NO_CLASSES = ("-", "--")  # a config's label_names where the model has no class head (never shown)
SEQUENCE_CLASSIFICATION, MASKED_LM, LANGUAGE_MODEL, BARE = "sequence-classification", "masked-lm", "language-model", ""


@dataclass(frozen=True)
class Imported:
    """A family importer's result: our config and state dict, ``sources`` (our tensor name -> theirs),
    the head that was mapped (``SEQUENCE_CLASSIFICATION``, ``MASKED_LM``, ``LANGUAGE_MODEL`` or
    ``BARE``), how a masked-LM head is built, and notes for the user."""

    config: ModelConfig
    state: dict[str, torch.Tensor]
    sources: dict[str, str]
    head: str = BARE
    mlm_activation: str = "gelu"
    mlm_width: int = 0  # the masked-LM head's inner width (ELECTRA's embedding size); 0: d_model
    mlm_tied: bool = True  # the masked-LM decoder shares the token embedding
    notes: tuple[str, ...] = ()
    assumptions: dict[str, dict] = field(default_factory=dict)


def setting(hf: dict, key: str, default: object = None, kind: type = int) -> object:
    """``hf[key]`` (``default`` when absent and a default is given) checked to be a ``kind``
    (ints positive); CheckpointError naming the key otherwise."""
    if key not in hf or hf[key] is None:
        if default is None:
            raise CheckpointError(f"{CONFIG_FILE} lacks {key!r}, which this model type needs: {DOWNLOAD_HINT}.")
        return default
    value = hf[key]
    ok = isinstance(value, kind) and not isinstance(value, bool) if kind is not bool else isinstance(value, bool)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value, ok = float(value), True
    if not ok or (kind is int and value <= 0):
        what = "a positive integer" if kind is int else kind.__name__
        raise CheckpointError(f"{CONFIG_FILE}: {key} must be {what}, not {value!r:.40}.")
    return value


def token_id(hf: dict, key: str, default: int) -> int:
    """A special token's id from config.json (``pad_token_id``...): a non-negative int, else ``default``."""
    value = hf.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def activation(hf: dict, key: str, default: str = "gelu") -> str:
    name = setting(hf, key, default, str)
    if name not in ACTIVATIONS:
        raise CheckpointError(
            f"{CONFIG_FILE}: {key} = {name!r} is not supported here (supported: {', '.join(ACTIVATIONS)})."
        )
    return ACTIVATIONS[name]


def label_names(hf: dict) -> tuple[str, ...]:
    """The classes of ``id2label`` in id order ({"0": "NEGATIVE", "1": "POSITIVE"})."""
    table = hf.get("id2label")
    if not isinstance(table, dict) or not table:
        count = hf.get("num_labels", 2)
        return tuple(f"LABEL_{i}" for i in range(count if isinstance(count, int) and 0 < count < 10_000 else 2))
    try:
        ordered = sorted((int(k), str(v)) for k, v in table.items())
    except (TypeError, ValueError) as err:
        raise CheckpointError(f"{CONFIG_FILE}: id2label keys must be class ids (0, 1, ...).") from err
    if [i for i, _ in ordered] != list(range(len(ordered))):
        raise CheckpointError(f"{CONFIG_FILE}: id2label must number its classes 0 .. {len(ordered) - 1}, each once.")
    return tuple(name for _, name in ordered)


def model_config(**values) -> ModelConfig:
    """Our config, its caps checked; CheckpointError naming config.json when a value does not fit."""
    try:
        config = ModelConfig(**values)
        config.check_limits()
    except ValueError as err:
        raise CheckpointError(f"{CONFIG_FILE} describes a model this app cannot build: {err}") from err
    return config


class StateMapper:
    """Our state dict from theirs: ``put`` takes one of their tensors (optionally transformed) under
    our name; a tensor the config needs but the file lacks is a CheckpointError naming both."""

    def __init__(self, theirs: dict[str, torch.Tensor], files: str, prefix: str = "") -> None:
        # a bare model is saved without its prefix ("bert."), a model with a head with it
        self.theirs = {k.removeprefix(prefix) if prefix else k: v for k, v in theirs.items()}
        self.files = files
        self.state: dict[str, torch.Tensor] = {}
        self.sources: dict[str, str] = {}
        self.prefix = prefix

    def has(self, name: str) -> bool:
        return name in self.theirs

    def take(self, name: str) -> torch.Tensor:
        if name not in self.theirs:
            raise CheckpointError(
                f"{self.files} lacks {self.prefix if '.' in name and self.prefix else ''}{name}, which {CONFIG_FILE} "
                f"implies: the weights and the config do not belong together ({DOWNLOAD_HINT})."
            )
        return self.theirs[name]

    def put(self, ours: str, theirs: str, transform: Callable[[torch.Tensor], torch.Tensor] | None = None) -> None:
        tensor = self.take(theirs)
        self.state[ours] = tensor if transform is None else transform(tensor)
        self.sources[ours] = theirs

    def linear(self, ours: str, theirs: str, transposed: bool = False) -> None:
        """weight and bias of a Linear; ``transposed``: GPT-2's Conv1D stores (in, out)."""
        self.put(f"{ours}.weight", f"{theirs}.weight", _transpose if transposed else None)
        self.put(f"{ours}.bias", f"{theirs}.bias")

    def norm(self, ours: str, theirs: str) -> None:
        self.put(f"{ours}.weight", f"{theirs}.weight")
        self.put(f"{ours}.bias", f"{theirs}.bias")

    def unused(self) -> list[str]:
        used = set(self.sources.values())
        return sorted(k for k in self.theirs if k not in used and not k.endswith("position_ids"))


def _transpose(t: torch.Tensor) -> torch.Tensor:
    return t.t()


def unused_note(mapper: StateMapper) -> tuple[str, ...]:
    """A note listing the file's tensors that the imported model does not use (e.g. a bare BERT's pooler)."""
    left = mapper.unused()
    if not left:
        return ()
    listed = ", ".join(left[:4]) + (f" (+{len(left) - 4} more)" if len(left) > 4 else "")
    return (f"{len(left)} tensor(s) in {mapper.files} are not used by the imported model: {listed}.",)
