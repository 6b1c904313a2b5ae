"""Build our model from a :class:`Detection` and the user's answers: the config, the state_dict
in our names, and a :class:`LoadedModel` in eval mode."""

from __future__ import annotations

import torch

from ..bundle import nonfinite_note, nonfinite_tensors
from ..core.config import ModelConfig
from ..core.loaded import LoadedModel
from ..core.model import build_model
from ..core.tokenizer import Vocab
from .detect import Detection
from .errors import CheckpointError
from .questions import Answers
from .vocabulary import BOS_TOKENS, EOS_TOKENS, special_id


def make_config(
    d: Detection, a: Answers, target_vocab: Vocab | None, bos: str | None = None, eos: str | None = None
) -> ModelConfig:
    """Our config for the recognised model with the given answers (``bos``/``eos``: the user's
    start and end tokens of the target side, else the vocabulary's own, else none)."""
    if d.decoder is not None and len(d.final_norms) == 1:
        raise CheckpointError("Only one of the encoder and decoder has a final LayerNorm; ours have both or neither.")
    head = d.head
    fields = dict(
        kind=d.kind,
        vocab_size=d.vocab_size,
        d_model=d.d_model,
        num_heads=a.num_heads,
        num_layers=len(d.encoder.layers),
        d_ff=d.d_ff,
        max_len=a.max_len,
        dropout=0.0,
        activation=a.activation,
        positional=a.positional,
        pe_base=float(a.pe_base),
        scale_embedding=a.scale_embedding,
        norm_first=a.norm_first,
        norm_style=d.norm_style,
        layer_norm_eps=d.family.layer_norm_eps,
        final_norm=bool(d.final_norms),
        mask_fill=float(a.mask_fill),
        pad_id=a.pad_id,
        default_max_tokens=min(a.max_len, 512),
    )
    if d.kind == "classifier":
        fields.update(
            has_head=head is not None,
            pooling=a.pooling if head else "mean",
            head_hidden=tuple(head.sizes[1:-1]) if head else (),
            single_logit=bool(head and head.num_outputs == 1),
            label_names=a.label_names if head else ("negative", "positive"),
        )
    else:
        fields.update(seq2seq_fields(d, target_vocab, bos, eos))
    return ModelConfig(**fields)


def stored_config(d: Detection) -> ModelConfig | None:
    """Our own config saved beside our own weights (``{"model": ..., "config": config.to_dict()}``),
    when it fits the shapes: it answers every question, including ones the page does not ask."""
    saved = d.raw.hints.get("_config_dict")
    if d.family.name != "attention-lab" or not isinstance(saved, dict):
        return None
    try:
        config = ModelConfig.from_dict(saved)
    except (TypeError, ValueError):
        return None
    fits = (config.kind, config.vocab_size, config.d_model, config.num_layers, config.d_ff) == (
        d.kind,
        d.vocab_size,
        d.d_model,
        len(d.encoder.layers),
        d.d_ff,
    )
    return config if fits else None


def seq2seq_fields(d: Detection, target_vocab: Vocab, bos: str | None, eos: str | None) -> dict:
    """Decoder sizes and the target side's special ids. A start or end token is the user's
    (``bos``/``eos``), else one the vocabulary holds (``<bos>``, ``<sos>``, ``<s>``, …), else
    None: never a token picked by its position."""
    return dict(
        num_decoder_layers=len(d.decoder.layers),
        target_vocab_size=d.target_vocab_size,
        target_pad_id=target_vocab.pad_id,
        bos_id=_special(target_vocab, bos, BOS_TOKENS, "--bos"),
        eos_id=_special(target_vocab, eos, EOS_TOKENS, "--eos"),
    )


def _special(vocab: Vocab, given: str | None, candidates: tuple[str, ...], flag: str) -> int | None:
    if given is None:
        return special_id(vocab, candidates)
    if given not in vocab:
        raise CheckpointError(f"{flag} {given!r} is not in the target vocabulary: give a token it holds.")
    return vocab.token_to_id(given)


def special_assumptions(config: ModelConfig, target_vocab: Vocab, bos: str | None, eos: str | None) -> dict:
    """{"bos": …, "eos": …} for ``LoadedModel.assumptions``: the token used (None: none) and its source."""
    out = {}
    for key, given, token_id in (("bos", bos, config.bos_id), ("eos", eos, config.eos_id)):
        token = None if token_id is None else target_vocab.id_to_token(token_id)
        out[key] = {"value": token, "source": "user" if given is not None else "vocabulary"}
    return out


def our_state(d: Detection, config: ModelConfig) -> dict[str, torch.Tensor]:
    """The checkpoint's tensors under our names (attention split into heads as ``config`` says)."""
    state = {"encoder.embedding.tokens.weight": d.embeddings["src"]}
    state.update(_stack_state("encoder", d.encoder, config.num_heads))
    if config.positional == "learned":
        state["encoder.embedding.positions.table.weight"] = d.positional.tables["src"][: config.max_len]
    if "src" in d.final_norms:
        state.update(_norm_state("encoder.final_norm", d.final_norms["src"].params))
    if d.decoder is not None:
        state["decoder.embedding.tokens.weight"] = d.embeddings["tgt"]
        state.update(_stack_state("decoder", d.decoder, config.num_heads))
        if config.positional == "learned":
            state["decoder.embedding.positions.table.weight"] = d.positional.tables["tgt"][: config.max_len]
        if "tgt" in d.final_norms:
            state.update(_norm_state("decoder.final_norm", d.final_norms["tgt"].params))
        state["generator.weight"], state["generator.bias"] = d.generator
    elif d.head is not None:
        for i, (_, weight, bias) in enumerate(d.head.layers):
            # make_head: a bare Linear, or Sequential(Linear, ReLU, Linear, …) with Linears at 0, 2, 4
            prefix = "classifier" if len(d.head.layers) == 1 else f"classifier.{2 * i}"
            state[f"{prefix}.weight"], state[f"{prefix}.bias"] = weight, bias
    return state


def _stack_state(prefix: str, stack, num_heads: int) -> dict[str, torch.Tensor]:
    out = {}
    for i, layer in enumerate(stack.layers):
        out.update({f"{prefix}.layers.{i}.{k}": v for k, v in layer.ours(num_heads).items()})
    return out


def _norm_state(prefix: str, params: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    names = ("weight", "bias") if "weight" in params else ("gamma", "beta") if "gamma" in params else ("a_2", "b_2")
    return {f"{prefix}.weight": params[names[0]], f"{prefix}.bias": params[names[1]]}


def build_loaded(
    d: Detection,
    config: ModelConfig,
    vocab: Vocab,
    target_vocab: Vocab | None,
    device: str | torch.device,
    notes: list[str],
    assumptions: dict[str, dict] | None = None,
) -> LoadedModel:
    """Our model with the checkpoint's weights, on ``device`` in eval mode (caps checked first)."""
    try:
        config.check_limits()
    except ValueError as err:
        raise CheckpointError(str(err)) from err
    state = our_state(d, config)
    bad = nonfinite_tensors(d.raw.state)
    if bad:
        notes = [nonfinite_note(bad)] + notes
    model = build_model(config)
    # a tied output layer shares one tensor with the embedding: copy so loading keeps both right
    result = model.load_state_dict({k: v.clone() for k, v in state.items()}, strict=False)
    if result.missing_keys or result.unexpected_keys:
        raise CheckpointError(
            f"Internal mapping error for {d.family.title}: missing {result.missing_keys[:5]}, "
            f"unexpected {result.unexpected_keys[:5]}."
        )
    model = model.to(device).eval()
    return LoadedModel(
        model, config, vocab, target_vocab, d.raw.name, d.family.name, None, tuple(notes), assumptions or {}, bad
    )
