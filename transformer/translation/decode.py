"""Decoding step by step on a trained encoder-decoder: greedy or seeded sampling with a
temperature, teacher-forced or free-running, a token forced at chosen steps, and
cross-attention heads switched off. Every step's rows are returned; nothing is stored on the model.
Each step feeds only the newest id: the keys and values of earlier ids, and of the source, are
kept in a per-call :class:`~transformer.model.DecoderCache` (so a step's cost does not grow with
the re-run of the whole prefix).

Shapes: L decoder layers, H heads, T_s source tokens, V target vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..core.loaded import LoadedModel
from ..core.model import DecoderCache, EncoderDecoder


@dataclass(frozen=True)
class DecoderPass:
    """One decoder run over a whole prefix: logits (B, T_t, V), self and cross weights per layer
    (B, H, T_t, T_t) and (B, H, T_t, T_s). With a cache, over the new ids only: (B, T_new, V),
    (B, H, T_new, T_past + T_new) and (B, H, T_new, T_s)."""

    logits: torch.Tensor
    self_weights: list[torch.Tensor]
    cross_weights: list[torch.Tensor]


def run_decoder(
    model: EncoderDecoder,
    tgt: torch.Tensor,
    memory: torch.Tensor,
    src_keep: torch.Tensor,
    cross_gates: torch.Tensor | None = None,
    cache: DecoderCache | None = None,
) -> DecoderPass:
    """The decoder's forward (``Decoder.forward``) with every weight and per-head gates on cross-attention.

    tgt (B, T_t) ids, memory (B, T_s, D), src_keep (B, T_s); cross_gates (L, H), 1 = head on.
    cache (``model.decoder.new_cache()``): tgt holds only the ids after those fed before, whose
    keys and values are reused (the memory's are projected once per decoding).
    """
    y, self_w, cross_w = model.decoder(tgt, memory, src_keep, True, cache=cache, cross_gates=cross_gates)
    return DecoderPass(model.generator(y), [w.weights for w in self_w], [w.weights for w in cross_w])


@dataclass(frozen=True)
class Step:
    """Decoding step t: the decoder saw ``prefix`` (t + 1 ids, ``<bos>`` first) and chose ``chosen``.

    probs (V,) next-token probabilities (softmax of logits / temperature); predicted: the
    model's own choice (argmax, or the sample); chosen: what was appended (predicted, forced or
    the teacher's token). self_row (L, H, t + 1): the new position's self-attention (the
    look-ahead mask hides later positions, which do not exist yet); cross_row (L, H, T_s).
    """

    t: int
    prefix: list[int]
    probs: np.ndarray
    predicted: int
    chosen: int
    how: str  # "model", "forced" or "teacher"
    self_row: np.ndarray
    cross_row: np.ndarray


@dataclass(frozen=True)
class Decoding:
    """ids: ``<bos>`` + the generated ids (``<eos>`` included when reached); steps: one per generated id."""

    ids: list[int]
    steps: list[Step] = field(default_factory=list)

    @property
    def output_ids(self) -> list[int]:
        return self.ids[1:]


@dataclass(frozen=True)
class DecodeOptions:
    """strategy "greedy" or "sample"; temperature > 0 scales logits before the softmax (and the
    sample); seed makes sampling repeatable; forced {step: id}; teacher: target ids without
    ``<bos>`` to follow (teacher forcing); cross_gates (L, H) with 0 = head off; max_new steps."""

    strategy: str = "greedy"
    temperature: float = 1.0
    seed: int = 0
    forced: dict[int, int] = field(default_factory=dict)
    teacher: tuple[int, ...] | None = None
    cross_gates: tuple[tuple[float, ...], ...] | None = None
    max_new: int | None = None


def _gates(options: DecodeOptions, device: torch.device) -> torch.Tensor | None:
    if options.cross_gates is None:
        return None
    return torch.tensor(options.cross_gates, dtype=torch.float32, device=device)


def _choose(logits: torch.Tensor, options: DecodeOptions, generator: torch.Generator) -> tuple[torch.Tensor, int]:
    """logits (V,) -> (probs (V,), predicted id)."""
    if options.temperature <= 0:
        raise ValueError("The temperature must be above 0.")
    probs = torch.softmax(logits.float() / options.temperature, dim=-1)
    if options.strategy == "sample":
        return probs, int(torch.multinomial(probs.cpu(), 1, generator=generator))
    if options.strategy != "greedy":
        raise ValueError(f"strategy must be 'greedy' or 'sample', not {options.strategy!r}.")
    return probs, int(logits.argmax())


def _next(step: int, predicted: int, options: DecodeOptions) -> tuple[int, str]:
    if step in options.forced:
        return options.forced[step], "forced"
    if options.teacher is not None and step < len(options.teacher):
        return options.teacher[step], "teacher"
    return predicted, "model"


@torch.no_grad()
def decode(loaded: LoadedModel, src_ids: list[int], options: DecodeOptions | None = None) -> Decoding:
    """Decode one source (a list of ids, no padding) step by step, keeping every step's rows."""
    options = options or DecodeOptions()
    model, cfg = loaded.model, loaded.config
    device = next(model.parameters()).device
    src = torch.tensor([src_ids], dtype=torch.long, device=device)
    enc = model.encoder(src)
    keep = src != cfg.pad_id
    gates = _gates(options, device)
    generator = torch.Generator().manual_seed(options.seed)
    limit = options.max_new or min(cfg.max_len - 1, 2 * len(src_ids) + 10)
    if options.teacher is not None:
        limit = max(limit, len(options.teacher))
    ids, steps = [cfg.bos_id], []
    cache = model.decoder.new_cache()  # each step feeds only the newest id
    for t in range(min(limit, cfg.max_len - 1)):
        out = run_decoder(model, torch.tensor([ids[-1:]], device=device), enc.hidden, keep, gates, cache)
        probs, predicted = _choose(out.logits[0, -1], options, generator)
        chosen, how = _next(t, predicted, options)
        rows = [
            torch.stack([w[0, :, -1] for w in ws]).float().cpu().numpy() for ws in (out.self_weights, out.cross_weights)
        ]
        steps.append(Step(t, list(ids), probs.cpu().numpy(), predicted, chosen, how, rows[0], rows[1]))
        ids.append(chosen)
        if chosen == cfg.eos_id and (options.teacher is None or t >= len(options.teacher) - 1):
            break
    return Decoding(ids, steps)


@torch.no_grad()
def teacher_forced(loaded: LoadedModel, src_ids: list[int], tgt_ids: list[int], cross_gates=None) -> DecoderPass:
    """One decoder pass over ``tgt_ids`` (``<bos>`` first) for one source: (1, T_t, ...) tensors."""
    model, cfg = loaded.model, loaded.config
    device = next(model.parameters()).device
    src = torch.tensor([src_ids], dtype=torch.long, device=device)
    enc = model.encoder(src)
    gates = None if cross_gates is None else torch.as_tensor(cross_gates, dtype=torch.float32, device=device)
    return run_decoder(model, torch.tensor([tgt_ids], device=device), enc.hidden, src != cfg.pad_id, gates)


@torch.no_grad()
def greedy_batch(model: EncoderDecoder, src: torch.Tensor, max_new: int) -> torch.Tensor:
    """Greedy decoding of a padded batch src (B, T_s) -> (B, T) ids, ``<bos>`` first; positions
    after a row's ``<eos>`` hold ``<pad>``. Used for evaluation."""
    cfg = model.config
    enc = model.encoder(src)
    keep = src != cfg.pad_id
    tgt = torch.full((src.shape[0], 1), cfg.bos_id, dtype=torch.long, device=src.device)
    done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    cache = model.decoder.new_cache()  # each step feeds only the newest ids
    for _ in range(min(max_new, cfg.max_len - 1)):
        y, _, _ = model.decoder(tgt[:, -1:], enc.hidden, keep, cache=cache)
        nxt = model.generator(y[:, -1]).argmax(-1)
        nxt = nxt.masked_fill(done, cfg.target_pad_id)
        tgt = torch.cat([tgt, nxt[:, None]], dim=1)
        done |= nxt == cfg.eos_id
        if bool(done.all()):
            break
    return tgt
