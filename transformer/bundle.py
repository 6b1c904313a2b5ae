"""The bundled-model format (DESIGN.md): a folder with config.json, model.safetensors, vocab.txt
and, for trained models, metrics.json."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

from .core.bpe import load_tokenizer
from .core.config import ModelConfig
from .core.decoder import KIND as LANGUAGE_MODEL
from .core.decoder import DecoderLM
from .core.loaded import LoadedModel
from .core.masked_lm import KIND as MASKED_LM
from .core.masked_lm import MaskedLanguageModel
from .core.model import build_model
from .core.pieces import TOKENIZER_FILE, PieceSplitter
from .core.tokenizer import Vocab

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
VOCAB_FILE = "vocab.txt"
TARGET_VOCAB_FILE = "target_vocab.txt"
METRICS_FILE = "metrics.json"
MAX_HEADER_BYTES = 16 * 1024**2  # a safetensors header is ~100 bytes per tensor
MAX_TENSORS = 20_000


def save_bundle(
    folder: str | Path,
    model: nn.Module,
    config: ModelConfig,
    vocab: Vocab,
    metrics: dict | None = None,
    target_vocab: Vocab | None = None,
    splitter: PieceSplitter | None = None,
) -> Path:
    """Write the model as a bundled-model folder (with ``tokenizer.json`` when it reads subword
    pieces); returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config.save(folder / CONFIG_FILE)
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(_untie(state), str(folder / WEIGHTS_FILE))
    vocab.save(folder / VOCAB_FILE)
    if target_vocab is not None:
        target_vocab.save(folder / TARGET_VOCAB_FILE)
    if splitter is not None:
        splitter.save(folder)
    if metrics is not None:
        (folder / METRICS_FILE).write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    return folder


def _untie(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """safetensors refuses tensors that share memory: give tied weights their own copy."""
    seen: set[int] = set()
    out = {}
    for key, tensor in state.items():
        ptr = tensor.data_ptr()
        out[key] = tensor.clone() if ptr in seen else tensor
        seen.add(ptr)
    return out


def build_bundled_model(config: ModelConfig) -> nn.Module:
    """The module a bundled config describes: a decoder-only language model, a masked language model
    (an encoder with its fill-in-the-blank head) or a classifier / encoder-decoder."""
    if config.kind == LANGUAGE_MODEL:
        return DecoderLM(config)
    if config.kind == MASKED_LM:
        return MaskedLanguageModel(config)
    return build_model(config)


def load_bundle(folder: str | Path, device: str | torch.device = "cpu") -> LoadedModel:
    """Read a bundled-model folder onto ``device`` in eval mode; raises FileNotFoundError /
    ValueError with what is wrong (messages name the folder, never its full path).

    The config is checked (types, caps) and its shapes compared with the weights file's header
    before anything is built or read in full."""
    folder = Path(folder)
    missing = [name for name in (CONFIG_FILE, WEIGHTS_FILE, VOCAB_FILE) if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder.name} is not a bundled model: missing {', '.join(missing)}.")
    config = ModelConfig.load(folder / CONFIG_FILE)  # types and caps checked: building is bounded
    header = read_safetensors_header(folder / WEIGHTS_FILE)
    vocab = Vocab.load(folder / VOCAB_FILE)
    if len(vocab) != config.vocab_size:
        raise ValueError(f"{VOCAB_FILE} has {len(vocab)} tokens but the config says vocab_size={config.vocab_size}.")
    model = build_bundled_model(config)
    check_shapes(model, header)  # before any tensor is read
    try:
        state = load_file(str(folder / WEIGHTS_FILE))
    except SafetensorError as err:
        raise ValueError(f"{WEIGHTS_FILE} is not a valid safetensors file ({err}).") from err
    model.load_state_dict(state)
    target_path = folder / TARGET_VOCAB_FILE
    target_vocab = Vocab.load(target_path) if target_path.is_file() else None
    splitter = load_splitter(folder, config, vocab)
    metrics_path = folder / METRICS_FILE
    metrics = _read_metrics(metrics_path) if metrics_path.is_file() else None
    bad = nonfinite_tensors(state)
    notes = (nonfinite_note(bad),) if bad else ()
    model = model.to(device).eval()
    return LoadedModel(
        model,
        config,
        vocab,
        target_vocab,
        folder.name,
        "attention-lab",
        metrics,
        notes,
        nonfinite_weights=bad,
        splitter=splitter,
        lm_tokenizer=load_tokenizer(folder) if config.kind == LANGUAGE_MODEL else None,
    )


def load_splitter(folder: Path, config: ModelConfig, vocab: Vocab) -> PieceSplitter | None:
    """The subword tokenizer a ``"wordpiece"`` model needs, checked against ``vocab.txt`` piece by piece
    (the ids the model was trained on); None for a ``basic_english`` model."""
    if config.tokenizer != "wordpiece":
        return None
    path = folder / TOKENIZER_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{folder.name} reads subword pieces but has no {TOKENIZER_FILE}: keep it beside the model."
        )
    return checked_splitter(PieceSplitter.load(path), vocab)


def checked_splitter(splitter: PieceSplitter, vocab: Vocab) -> PieceSplitter:
    """``splitter`` when its pieces are ``vocab``'s, in the same order; ValueError otherwise."""
    if splitter.vocabulary != vocab.itos:
        raise ValueError(
            f"{TOKENIZER_FILE} and {VOCAB_FILE} list different pieces: keep the pair saved with the model."
        )
    return splitter


def _read_metrics(path: Path) -> dict | None:
    if path.stat().st_size > MAX_HEADER_BYTES:
        raise ValueError(f"{METRICS_FILE} is {path.stat().st_size:,} bytes; metrics are a few kB.")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, RecursionError, json.JSONDecodeError) as err:
        raise ValueError(f"{METRICS_FILE} is not valid JSON ({type(err).__name__}).") from err
    return data if isinstance(data, dict) else None


def read_safetensors_header(path: str | Path) -> dict[str, tuple[int, ...]]:
    """Tensor name -> shape from a ``.safetensors`` file's header, read without the tensors.

    The header's length and its number of tensors are checked before it is parsed, so a file
    claiming a million tensors is refused at once. Raises ValueError saying what is wrong."""
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as f:
        prefix = f.read(8)
        length = int.from_bytes(prefix, "little") if len(prefix) == 8 else -1
        if length <= 1 or length > size - 8:
            raise ValueError(
                f"{path.name} is not a safetensors file (it may be a pickle or cut off): save the weights with "
                "safetensors.torch.save_file."
            )
        if length > MAX_HEADER_BYTES:
            raise ValueError(f"{path.name} has a {length:,}-byte header; the limit is {MAX_HEADER_BYTES:,} bytes.")
        raw = f.read(length)
    count = raw.count(b'"dtype"')
    if count > MAX_TENSORS:
        raise ValueError(f"{path.name} declares {count:,} tensors; the limit is {MAX_TENSORS:,}.")
    try:
        header = json.loads(raw)
        return {k: tuple(int(n) for n in v["shape"]) for k, v in header.items() if k != "__metadata__"}
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as err:
        raise ValueError(f"{path.name} has a damaged safetensors header ({type(err).__name__}).") from err


def check_shapes(model: nn.Module, header: dict[str, tuple[int, ...]]) -> None:
    """Compare the shapes of the model the config describes with the weights file's header;
    raises ValueError naming the first differences."""
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    missing = sorted(set(expected) - set(header))
    unexpected = sorted(set(header) - set(expected))
    wrong = [f"{k} {header[k]} (config: {expected[k]})" for k in expected if k in header and header[k] != expected[k]]
    if missing or unexpected or wrong:
        raise ValueError(
            f"The weights do not fit config.json: missing {missing[:3]}, unexpected {unexpected[:3]}, "
            f"other shapes {wrong[:3]}. Keep the config.json that was saved with these weights."
        )


def nonfinite_tensors(state: dict[str, torch.Tensor]) -> tuple[str, ...]:
    """Names of floating tensors holding NaN or ±inf (a diverged training run saves these)."""
    return tuple(k for k, v in state.items() if v.is_floating_point() and not bool(torch.isfinite(v).all()))


def nonfinite_note(names: tuple[str, ...]) -> str:
    """The message shown for weights that hold NaN or ±inf."""
    listed = ", ".join(names[:5]) + (f" (+{len(names) - 5} more)" if len(names) > 5 else "")
    return (
        f"{len(names)} weight tensor(s) hold NaN or infinite values: {listed}. Training probably diverged "
        "(try a lower learning rate or gradient clipping); outputs that depend on them cannot be shown."
    )
