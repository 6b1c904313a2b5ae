"""Recognise a state_dict: its family, its stacks and parts, and every size the shapes tell.

:func:`detect` returns a :class:`Detection`, shown to the user before the model is built
(``findings()`` as codes the page translates, ``summary()`` in English); nothing is built or
run here.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..core.positional import sinusoidal_encoding
from .errors import CheckpointError, describe_keys
from .families import Family, detect_family, what_we_look_for
from .findings import Finding, english_rows
from .parts import Head, Module, Parts, chain_head, split_parts
from .safe_load import MAX_VOCAB, RawCheckpoint
from .stacks import Stack

SINUSOID_EXACT = 1e-6  # a saved table this close to our formula is the formula


@dataclass(frozen=True)
class Positional:
    """kind: 'sinusoidal' (formula, nothing loaded) or 'learned' (tables loaded as stored);
    tables: side ('src', 'tgt') -> (L, D); max_len None when nothing says it; note for the user."""

    kind: str
    tables: dict[str, torch.Tensor]
    max_len: int | None
    note: Finding


@dataclass(frozen=True)
class Detection:
    """Everything recognised in one checkpoint, before any question is answered."""

    raw: RawCheckpoint
    family: Family
    encoder: Stack
    decoder: Stack | None
    embeddings: dict[str, torch.Tensor]  # side -> (V, D)
    positional: Positional
    final_norms: dict[str, Module]
    head: Head | None
    head_problem: Finding | None
    generator: tuple[torch.Tensor, torch.Tensor] | None
    notes: tuple[Finding, ...]  # shown under the table; in English on a loaded model's notes

    @property
    def kind(self) -> str:
        return "encoder-decoder" if self.decoder is not None else "classifier"

    @property
    def d_model(self) -> int:
        return self.embeddings["src"].shape[1]

    @property
    def d_ff(self) -> int:
        return self.encoder.layers[0].d_ff

    @property
    def vocab_size(self) -> int:
        return self.embeddings["src"].shape[0]

    @property
    def target_vocab_size(self) -> int:
        return self.embeddings["tgt"].shape[0] if "tgt" in self.embeddings else 0

    @property
    def norm_style(self) -> str:
        return self.encoder.layers[0].norm_style


def detect(raw: RawCheckpoint) -> Detection:
    """Recognise ``raw``; raises :class:`CheckpointError` saying what was found and what is missing."""
    family = detect_family(raw.state)
    if family is None:
        raise CheckpointError(
            f"{raw.name}: no known architecture. It holds {len(raw.state)} tensors: {describe_keys(raw.state)}. "
            f"We recognise attention weights named like these — {what_we_look_for()}."
        )
    encoder, decoder = _pick_stacks(raw, family)
    d_model = encoder.layers[0].attention["self_attn"].d_model
    _check_uniform([encoder] + ([decoder] if decoder else []), d_model)
    parts = split_parts(raw.state, [encoder] + ([decoder] if decoder else []), d_model)
    embeddings = _embeddings(parts, decoder is not None, raw.name, encoder)
    notes: list[Finding] = []
    if decoder is not None:
        generator = _generator(parts, embeddings["tgt"].shape[0])
        head, problem = None, None
    else:
        generator = None
        head, problem = _head(parts, encoder)
        if problem:
            notes.append(Finding("note_head_unmapped", {"problem": problem}))
    positional = _positional(parts, embeddings, d_model)
    notes.append(positional.note)
    return Detection(
        raw,
        family,
        encoder,
        decoder,
        embeddings,
        positional,
        dict(parts.final_norms),
        head,
        problem,
        generator,
        tuple(notes),
    )


def _pick_stacks(raw: RawCheckpoint, family: Family) -> tuple[Stack, Stack | None]:
    from .stacks import find_stacks

    stacks = find_stacks(raw.state, family)
    encoders = [s for s in stacks if not s.is_decoder]
    decoders = [s for s in stacks if s.is_decoder]
    if len(encoders) != 1 or len(decoders) > 1:
        found = (
            ", ".join(
                f"'{s.prefix}' ({len(s.layers)} {'decoder' if s.is_decoder else 'encoder'} layers)" for s in stacks
            )
            or "none"
        )
        raise CheckpointError(
            f"{raw.name} looks like {family.title}, but we need one stack of encoder layers (and at most one of "
            f"decoder layers); found: {found}."
        )
    return encoders[0], (decoders[0] if decoders else None)


def _check_uniform(stacks: list[Stack], d_model: int) -> None:
    for stack in stacks:
        d_ffs = {layer.d_ff for layer in stack.layers}
        styles = {layer.norm_style for layer in stack.layers}
        widths = {s.d_model for layer in stack.layers for s in layer.attention.values()}
        if len(d_ffs) > 1 or len(styles) > 1 or widths != {d_model}:
            raise CheckpointError(f"The layers under '{stack.prefix}' differ in size or kind; ours are all alike.")
    if len({s.layers[0].d_ff for s in stacks}) > 1:
        raise CheckpointError("The encoder and decoder layers have different feed-forward sizes; ours share one.")


def _embeddings(parts: Parts, seq2seq: bool, name: str, encoder: Stack) -> dict[str, torch.Tensor]:
    """side -> token embedding (V, D); a single unnamed one serves both sides of an encoder-decoder."""
    found = dict(parts.embeddings)
    shared = found.pop("shared", None)
    sides = ("src", "tgt") if seq2seq else ("src",)
    out = {side: found.pop(side).params["weight"] for side in sides if side in found}
    if shared is None and seq2seq and len(out) == 1 and not found:
        # one embedding for both sides (e.g. the course's nn.Transformer model's `input_embedding`)
        shared = parts.embeddings[next(iter(out))]
    for side in sides:
        if side not in out and shared is not None:
            out[side] = shared.params["weight"]
    if found:  # an encoder-only model with a 'tgt' embedding, say
        parts.others.extend(found.values())
    missing = [s for s in sides if s not in out]
    if missing:
        raise CheckpointError(
            f"{name} has {len(encoder.layers)} encoder layers under '{encoder.prefix}' but no "
            f"{'target ' if missing == ['tgt'] else ''}token embedding (a (vocabulary, d_model) weight with 'emb' "
            "or 'tok' in its name, without a bias). Save the whole model, including the embedding that turns "
            "token ids into vectors."
        )
    for side, table in out.items():
        if table.shape[0] == 0:
            raise CheckpointError(
                f"The {side} token embedding has 0 rows, so no token can be looked up: save the model after "
                "building its vocabulary (nn.Embedding(len(vocab), d_model))."
            )
        if table.shape[0] > MAX_VOCAB:
            raise CheckpointError(f"The {side} embedding has {table.shape[0]:,} rows; the limit is {MAX_VOCAB:,}.")
    return out


def _generator(parts: Parts, target_vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    fits = [m for m in parts.linears if m.params["weight"].shape[0] == target_vocab]
    leftover = [m for m in parts.linears if m not in fits[:1]] + parts.others
    if len(fits) != 1 or leftover:
        raise CheckpointError(
            f"An encoder-decoder needs one output layer (target vocabulary {target_vocab} × d_model); found "
            f"{len(fits)}, and could not place: {', '.join(m.describe() for m in leftover) or 'nothing'}."
        )
    weight = fits[0].params["weight"]
    return weight, fits[0].params.get("bias", torch.zeros(weight.shape[0]))


def _head(parts: Parts, encoder: Stack) -> tuple[Head | None, Finding | None]:
    """The head, or why not. Leftovers that could sit inside the encoder stop the import instead."""
    inside = [m for m in parts.others if (encoder.root and m.path.startswith(encoder.root))]
    if inside:
        raise CheckpointError(
            "These weights sit in the encoder but fit none of our modules, so its attention could not be "
            f"reproduced: {', '.join(m.describe() for m in inside)}."
        )
    if parts.others:
        return None, Finding("head_not_linear", {"layers": ", ".join(m.describe() for m in parts.others)})
    return chain_head(parts.linears, encoder.layers[0].attention["self_attn"].d_model)


def _positional(parts: Parts, embeddings: dict[str, torch.Tensor], d_model: int) -> Positional:
    tables = {side: t for side, (_, t) in parts.tables.items()}
    shared = tables.pop("shared", None)
    sides = list(embeddings)
    tables = {side: tables.get(side, shared) for side in sides if tables.get(side, shared) is not None}
    if not tables:
        return Positional("sinusoidal", {}, None, Finding("note_positional_assumed"))
    if len(tables) != len(sides):
        raise CheckpointError("A positional table is saved for one side of the model but not the other.")
    max_len = min(t.shape[0] for t in tables.values())
    tables = {side: t[:max_len] for side, t in tables.items()}
    formula = torch.from_numpy(sinusoidal_encoding(max_len, d_model))
    gap = max(float((t - formula).abs().max()) for t in tables.values())
    if gap <= SINUSOID_EXACT:
        return Positional("sinusoidal", {}, max_len, Finding("note_positional_formula", {"max_len": max_len}))
    if gap < 1e-2:
        note = Finding("note_positional_rounding", {"max_len": max_len, "gap": gap})
    else:
        note = Finding("note_positional_table", {"max_len": max_len})
    return Positional("learned", tables, max_len, note)


def findings(d: Detection) -> list[tuple[str, Finding]]:
    """(row, value) of everything inferred from the shapes: the row's code and its value as a Finding."""
    rows = [
        ("architecture", Finding("family", {"name": d.family.name, "title": d.family.title})),
        ("kind", Finding(_kind_code(d))),
        ("vocab", Finding("count", {"n": d.vocab_size})),
    ]
    if d.decoder is not None:
        rows.append(("target_vocab", Finding("count", {"n": d.target_vocab_size})))
    rows += [("d_model", Finding("number", {"n": d.d_model})), ("encoder_layers", _number(len(d.encoder.layers)))]
    if d.decoder is not None:
        rows.append(("decoder_layers", _number(len(d.decoder.layers))))
    max_len = _number(d.positional.max_len) if d.positional.max_len else Finding("max_len_not_stored")
    positional = "positional_formula" if d.positional.kind == "sinusoidal" else "positional_table"
    return rows + [
        ("d_ff", _number(d.d_ff)),
        ("max_len", max_len),
        ("positional", Finding(positional)),
        ("norm", _norm(d)),
        ("head", _head_finding(d)),
        ("parameters", Finding("count", {"n": d.raw.num_parameters})),
    ]


def summary(d: Detection) -> list[tuple[str, str]]:
    """(what, value) rows of :func:`findings` in English, for the command line and the tests."""
    return english_rows(findings(d))


def _number(n: int) -> Finding:
    return Finding("number", {"n": n})


def _kind_code(d: Detection) -> str:
    if d.decoder is not None:
        return "kind_encoder_decoder"
    return "kind_classifier" if d.head else "kind_encoder_only"


def _head_finding(d: Detection) -> Finding:
    if d.head is not None:
        return d.head.finding()
    if d.kind == "classifier":
        return Finding("head_none", {"problem": d.head_problem})
    return Finding("head_output_layer", {"n": d.target_vocab_size})


def _norm(d: Detection) -> Finding:
    style = "norm_std_eps" if d.norm_style == "std_eps" else "norm_layer_norm"
    return Finding(style + ("_final" if d.final_norms else ""), {"eps": d.family.layer_norm_eps})
