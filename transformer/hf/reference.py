"""The imported model against the reference implementation on one small input: the largest
difference of every layer's and head's attention weight, and of the logits, against ``transformers``
(eager attention, ``output_attentions=True``; with its default ``sdpa`` attention it returns no weights).

The input is a short sentence for the text families (BERT, RoBERTa, DistilBERT, ELECTRA, GPT-2); the
same sentence with a short forced decoder prefix for Marian (encoder self, decoder self and cross
attention); a picture the check draws itself, of the model's own size, for ViT (class-token logits).

``transformers`` is a development dependency: where it is not installed, :func:`reference_available`
is False and nothing is compared.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

import torch

from .folder import CONFIG_FILE
from .mapping import LANGUAGE_MODEL, MASKED_LM

CHECK_TEXT = "the movie was great"
PREFIX_TOKENS = 3  # target tokens forced after the decoder's start token in the translator's check
ENCODER, DECODER_SELF, CROSS = "encoder", "decoder_self", "cross"


@dataclass(frozen=True)
class ReferenceCheck:
    """``attention``: the largest |ours − theirs| over every layer, head, query and key; ``per_layer``:
    the same per layer (a translator's encoder layers, then its decoder layers); ``logits``: the
    largest difference of the logits (None for a bare encoder); ``reference``: the ``transformers``
    class compared with; ``text``: the sentence (empty for a picture); ``tokens``: the input's length
    in tokens (a picture's class token and patches). A translator's ``parts`` name the largest
    difference per kind of attention ((ENCODER, d), (DECODER_SELF, d), (CROSS, d)) and ``prefix`` its
    forced decoder length (start token included) and ``encoder_layers`` how many of ``per_layer`` are
    its encoder's; a picture's ``picture`` is its side in pixels."""

    text: str
    reference: str
    tokens: int
    attention: float
    per_layer: tuple[float, ...]
    logits: float | None
    parts: tuple[tuple[str, float], ...] = ()
    prefix: int = 0
    encoder_layers: int = 0
    picture: int = 0


def reference_available() -> bool:
    return importlib.util.find_spec("transformers") is not None


def reference_check(folder: str | Path, loaded, text: str = CHECK_TEXT) -> ReferenceCheck | None:
    """``loaded`` (imported from ``folder``) against ``transformers``; None where ``transformers`` is
    missing or the folder is no family this check knows."""
    if not reference_available():
        return None
    hf_config = json.loads((Path(folder) / CONFIG_FILE).read_text(encoding="utf-8"))
    architecture = _architecture(hf_config)
    model_type = hf_config.get("model_type")
    if model_type == "vit":
        return _vision_check(Path(folder), architecture, loaded)
    if model_type == "marian":
        return _translation_check(Path(folder), architecture, loaded, text)
    if getattr(loaded, "encoder", None) is None:
        return None
    return _text_check(Path(folder), architecture, loaded, text)


def _architecture(hf_config: dict) -> str:
    architectures = hf_config.get("architectures") or []
    return str(architectures[0]) if architectures else "AutoModel"


def _reference_model(folder: Path, architecture: str):
    import transformers

    cls = getattr(transformers, architecture, None) or transformers.AutoModel
    return cls.from_pretrained(folder, attn_implementation="eager").eval()


def _largest(ours: list[torch.Tensor], theirs) -> tuple[float, ...]:
    """Per layer, the largest |ours − theirs| of two lists of (1, H, T_q, T_k) weights."""
    return tuple(float((a.cpu() - b.float()).abs().max()) for a, b in zip(ours, theirs, strict=True))


def _logits_gap(ours: torch.Tensor | None, theirs: torch.Tensor | None) -> float | None:
    if ours is None or theirs is None:
        return None
    return float((ours.cpu() - theirs.float()).abs().max())


def _device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


def _text_check(folder: Path, architecture: str, loaded, text: str) -> ReferenceCheck:
    """A text family (encoder or GPT-2) on ``text``."""
    ids = torch.tensor([loaded.text_encoder().encode(text).ids])
    with torch.no_grad():
        out = _reference_model(folder, architecture)(ids, output_attentions=True)
    ours, our_logits = _ours(loaded, ids)
    per_layer = _largest(ours, out.attentions)
    logits = _logits_gap(our_logits, getattr(out, "logits", None))
    return ReferenceCheck(text, architecture, ids.shape[1], max(per_layer), per_layer, logits)


def _ours(loaded, ids: torch.Tensor):
    """(attention per layer (1, H, T, T), logits or None) from our engine."""
    model = loaded.model
    with torch.no_grad():
        out = model(ids.to(_device(model)), need_weights=True)
        if loaded.head == LANGUAGE_MODEL:
            return [w.weights for w in out.attention], out.logits
        weights = [w.weights for w in out.encoder.attention]
        if loaded.head == MASKED_LM:
            return weights, model.token_logits(out.encoder.hidden)
        return weights, out.logits


def check_picture(channels: int, side: int) -> torch.Tensor:
    """(1, channels, side, side) in [0, 1]: a fixed picture with structure at every scale (two
    gradients, a checkerboard of 4-pixel squares, a bright square off centre), so that every head
    attends to something other than the mean."""
    ramp = torch.linspace(0.0, 1.0, side)
    rows, cols = ramp[:, None].expand(side, side), ramp[None, :].expand(side, side)
    index = torch.arange(side)
    checker = ((index[:, None] // 4 + index[None, :] // 4) % 2).float()
    square = torch.zeros(side, side)
    square[side // 5 : side // 2, side // 3 : 3 * side // 4] = 1.0
    planes = [rows, cols, 0.5 * checker + 0.5 * square]
    picture = torch.stack([planes[c % 3] * (1.0 - 0.1 * (c // 3)) for c in range(channels)])
    return picture[None]


def _vision_check(folder: Path, architecture: str, loaded) -> ReferenceCheck:
    """A ViT on :func:`check_picture` of its own size: every layer's attention and the class-token logits."""
    config = loaded.config
    picture = check_picture(config.channels, config.image_size)
    mean = torch.tensor(config.pixel_mean or (0.0,) * config.channels)[:, None, None]
    std = torch.tensor(config.pixel_std or (1.0,) * config.channels)[:, None, None]
    with torch.no_grad():
        theirs = _reference_model(folder, architecture)(pixel_values=(picture - mean) / std, output_attentions=True)
        ours = loaded.model(picture.to(_device(loaded.model)), need_weights=True)  # normalises [0, 1] itself
    per_layer = _largest([w.weights for w in ours.weights], theirs.attentions)
    logits = _logits_gap(ours.logits, getattr(theirs, "logits", None))
    tokens = ours.weights[0].weights.shape[-1]
    return ReferenceCheck("", architecture, tokens, max(per_layer), per_layer, logits, picture=config.image_size)


def forced_prefix(loaded, text: str) -> list[int]:
    """The decoder's start token and the first :data:`PREFIX_TOKENS` target ids of ``text`` (its
    target-side pieces where the tokenizer has them, else its source ids within the target vocabulary)."""
    config = loaded.config
    splitter = getattr(loaded, "splitter", None)
    if splitter is not None and hasattr(splitter, "encode_target"):
        ids = splitter.encode_target(text).ids
    else:
        ids = loaded.text_encoder().encode(text).ids
    return [config.bos_id] + [i % config.target_vocab_size for i in ids[:PREFIX_TOKENS]]


def _translation_check(folder: Path, architecture: str, loaded, text: str) -> ReferenceCheck:
    """A Marian translator on ``text`` with a forced decoder prefix: encoder self, decoder self and
    cross attention, and the logits at every forced position."""
    source = torch.tensor([loaded.text_encoder().encode(text).ids])
    target = torch.tensor([forced_prefix(loaded, text)])
    with torch.no_grad():
        theirs = _reference_model(folder, architecture)(
            input_ids=source, decoder_input_ids=target, output_attentions=True
        )
        device = _device(loaded.model)
        ours = loaded.model(source.to(device), target.to(device), need_weights=True)
    encoder = _largest([w.weights for w in ours.encoder.attention], theirs.encoder_attentions)
    decoder_self = _largest([w.weights for w in ours.decoder_self], theirs.decoder_attentions)
    cross = _largest([w.weights for w in ours.cross], theirs.cross_attentions)
    per_layer = encoder + tuple(max(s, c) for s, c in zip(decoder_self, cross, strict=True))
    parts = ((ENCODER, max(encoder)), (DECODER_SELF, max(decoder_self)), (CROSS, max(cross)))
    logits = _logits_gap(ours.logits, getattr(theirs, "logits", None))
    return ReferenceCheck(
        text, architecture, source.shape[1], max(per_layer), per_layer, logits, parts, target.shape[1], len(encoder)
    )
