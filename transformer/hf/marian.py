"""Hugging Face Marian translators (``MarianMTModel``, e.g. ``Helsinki-NLP/opus-mt-ko-en``) as our
:class:`~transformer.model.EncoderDecoder`.

What Marian is, in our config's words: post-LN encoder and decoder layers (``norm_first=False``,
no final LayerNorm), token embeddings × √d_model (``scale_embedding``), fixed sinusoids with every
sine before every cosine (``positional="sinusoidal_halves"``), the feed-forward activation of its
config (``swish`` is SiLU), one table shared by the encoder, the decoder and the output layer, and
``final_logits_bias`` as the output layer's bias. The decoder starts from the pad token
(``decoder_start_token_id``), so target padding is never masked (``ModelConfig.target_padding_id``).
"""

from __future__ import annotations

import torch

from ..checkpoints.errors import CodedError
from ..core.config import ModelConfig
from ..core.loaded import LoadedModel
from ..core.model import EncoderDecoder
from ..core.positional import sinusoidal_halves
from ..core.tokenizer import PAD, UNK, Vocab
from .spm import MarianTokenizer

# Hugging Face activation names -> ours (ACT2FN: "swish" and "silu" are the same function)
ACTIVATIONS = {"swish": "silu", "silu": "silu", "gelu": "gelu", "relu": "relu"}
# MarianConfig's defaults, for keys a config.json leaves out
DEFAULTS = {
    "activation_function": "gelu",
    "scale_embedding": False,
    "max_position_embeddings": 1024,
    "pad_token_id": 58100,
    "eos_token_id": 0,
    "share_encoder_decoder_embeddings": True,
    "tie_word_embeddings": True,
    "dropout": 0.1,
    "attention_dropout": 0.0,
}
# per layer: Hugging Face name -> ours, for the encoder (self-attention) and the decoder (both)
ATTENTION = {"q_proj": "w_q", "k_proj": "w_k", "v_proj": "w_v", "out_proj": "w_o"}
ENCODER_LAYER = {
    **{f"self_attn.{theirs}": f"self_attn.{ours}" for theirs, ours in ATTENTION.items()},
    "self_attn_layer_norm": "attn_block.norm",
    "fc1": "ffn.linear1",
    "fc2": "ffn.linear2",
    "final_layer_norm": "ffn_block.norm",
}
DECODER_LAYER = {
    **{f"self_attn.{theirs}": f"self_attn.{ours}" for theirs, ours in ATTENTION.items()},
    **{f"encoder_attn.{theirs}": f"cross_attn.{ours}" for theirs, ours in ATTENTION.items()},
    "self_attn_layer_norm": "self_block.norm",
    "encoder_attn_layer_norm": "cross_block.norm",
    "fc1": "ffn.linear1",
    "fc2": "ffn.linear2",
    "final_layer_norm": "ffn_block.norm",
}
# tensors a Marian file may hold that our model recomputes (checked against the sinusoids)
POSITION_TABLES = ("encoder.embed_positions.weight", "decoder.embed_positions.weight")


def _get(hf_config: dict, key: str):
    return hf_config.get(key, DEFAULTS.get(key))


def _same(hf_config: dict, encoder_key: str, decoder_key: str) -> int:
    """A size that our config holds once: the encoder's and the decoder's must agree."""
    value, other = hf_config[encoder_key], hf_config.get(decoder_key, hf_config[encoder_key])
    if value != other:
        raise ValueError(
            f"config.json: {encoder_key} = {value} but {decoder_key} = {other}; this app takes Marian models "
            "whose encoder and decoder have the same number of heads and the same feed-forward width."
        )
    return int(value)


def _check_supported(hf_config: dict) -> None:
    """ValueError naming any setting of this config.json that our model does not reproduce."""
    if hf_config.get("model_type", "marian") != "marian":
        raise ValueError(f"config.json says model_type {hf_config.get('model_type')!r}, not 'marian'.")
    # settings of older Marian conversions (BART-style options); ours is post-LN with no extra norms
    for key, wanted in (("normalize_before", False), ("add_final_layer_norm", False), ("normalize_embedding", False)):
        if hf_config.get(key, wanted) != wanted:
            raise ValueError(f"config.json sets {key} = {hf_config[key]}; this app reads Marian models without it.")
    if hf_config.get("static_position_embeddings", True) is not True:
        raise ValueError("config.json asks for learned positions; Marian models read here use fixed sinusoids.")
    activation = _get(hf_config, "activation_function")
    if activation not in ACTIVATIONS:
        raise ValueError(
            f"config.json: activation_function {activation!r} is not one this app computes "
            f"({', '.join(sorted(ACTIVATIONS))})."
        )


def marian_config(hf_config: dict) -> ModelConfig:
    """Our ``ModelConfig`` for a Marian ``config.json`` (parsed); raises ValueError when a setting
    cannot be reproduced or a size is beyond the app's limits."""
    _check_supported(hf_config)
    try:
        vocab_size = int(hf_config["vocab_size"])
        shared = bool(_get(hf_config, "share_encoder_decoder_embeddings"))
        target_size = vocab_size if shared else int(hf_config.get("decoder_vocab_size") or vocab_size)
        pad = int(_get(hf_config, "pad_token_id"))
        start = hf_config.get("decoder_start_token_id")
        config = ModelConfig(
            kind="encoder-decoder",
            vocab_size=vocab_size,
            target_vocab_size=target_size,
            d_model=int(hf_config["d_model"]),
            num_heads=_same(hf_config, "encoder_attention_heads", "decoder_attention_heads"),
            num_layers=int(hf_config["encoder_layers"]),
            num_decoder_layers=int(hf_config["decoder_layers"]),
            d_ff=_same(hf_config, "encoder_ffn_dim", "decoder_ffn_dim"),
            max_len=int(_get(hf_config, "max_position_embeddings")),
            dropout=float(_get(hf_config, "dropout")),
            attention_dropout=float(_get(hf_config, "attention_dropout")),
            activation=ACTIVATIONS[_get(hf_config, "activation_function")],
            positional="sinusoidal_halves",
            scale_embedding=bool(_get(hf_config, "scale_embedding")),
            norm_first=False,
            pad_id=pad,
            target_pad_id=pad,
            bos_id=pad if start is None else int(start),
            eos_id=int(_get(hf_config, "eos_token_id")),
            tie_output_embedding=bool(_get(hf_config, "tie_word_embeddings")),
            label_names=(),
        )
    except KeyError as err:
        raise ValueError(f"config.json lacks {err.args[0]!r}, which a Marian model needs.") from err
    except TypeError as err:
        raise ValueError(f"config.json has a value of the wrong type ({err}).") from err
    config.check_limits()
    return config


def _strip_prefix(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """MarianMTModel's names start with ``model.``; a bare MarianModel's do not."""
    return {k.removeprefix("model."): v for k, v in weights.items()}


def _token_tables(w: dict[str, torch.Tensor], config: ModelConfig) -> dict[str, torch.Tensor]:
    """The encoder's, the decoder's and the output layer's tables (one shared tensor, or three)."""
    shared = w.get("shared.weight")
    source = w.get("encoder.embed_tokens.weight", shared)
    target = w.get("decoder.embed_tokens.weight", shared)
    if source is None or target is None:
        raise ValueError("The weights hold no token embeddings (model.shared.weight or *.embed_tokens.weight).")
    out = {"encoder.embedding.tokens.weight": source, "decoder.embedding.tokens.weight": target}
    if not config.tie_output_embedding:
        if "lm_head.weight" not in w:
            raise ValueError(
                "config.json unties the output layer (tie_word_embeddings false) but lm_head.weight is missing."
            )
        out["generator.weight"] = w["lm_head.weight"]
    bias = w.get("final_logits_bias")
    out["generator.bias"] = torch.zeros(config.target_vocab_size) if bias is None else bias.reshape(-1)
    return out


def _layers(w: dict[str, torch.Tensor], side: str, count: int, names: dict[str, str]) -> dict[str, torch.Tensor]:
    out = {}
    for i in range(count):
        for theirs, ours in names.items():
            for kind in ("weight", "bias"):
                key = f"{side}.layers.{i}.{theirs}.{kind}"
                if key not in w:
                    raise ValueError(f"The weights lack {key}: the file does not match config.json.")
                out[f"{side}.layers.{i}.{ours}.{kind}"] = w[key]
    return out


def _check_positions(w: dict[str, torch.Tensor], config: ModelConfig) -> None:
    """A file that stores the position tables must hold Marian's sinusoids (ours are recomputed)."""
    expected = torch.from_numpy(sinusoidal_halves(config.max_len, config.d_model))
    for key in POSITION_TABLES:
        table = w.get(key)
        if table is not None and (table.shape != expected.shape or (table.float() - expected).abs().max() > 1e-4):
            raise ValueError(f"{key} is not Marian's fixed sinusoid table; this app cannot reproduce it.")


def marian_state(weights: dict[str, torch.Tensor], config: ModelConfig) -> dict[str, torch.Tensor]:
    """Hugging Face Marian names -> our EncoderDecoder's state dict; ValueError naming a missing tensor."""
    w = _strip_prefix(weights)
    _check_positions(w, config)
    state = _token_tables(w, config)
    state.update(_layers(w, "encoder", config.num_layers, ENCODER_LAYER))
    state.update(_layers(w, "decoder", config.num_decoder_layers, DECODER_LAYER))
    return state


def placeholder_vocab(size: int, config: ModelConfig) -> Vocab:
    """A vocabulary of numbered tokens (``<id 7>``) for weights imported without their ``vocab.json``:
    ``<pad>`` and ``</s>`` at the config's ids and ``<unk>`` at the first id left (Marian puts it at 1)."""
    itos = [f"<id {i}>" for i in range(size)]
    itos[config.pad_id] = PAD
    if config.eos_id is not None and config.eos_id != config.pad_id:
        itos[config.eos_id] = "</s>"
    unk = next(i for i in (1, *range(size)) if itos[i].startswith("<id "))
    itos[unk] = UNK
    return Vocab(itos)


def import_marian(
    hf_config: dict,
    weights: dict[str, torch.Tensor],
    tokenizer: MarianTokenizer | None = None,
    name: str = "",
) -> LoadedModel:
    """A Marian ``config.json`` (parsed) and its weights (Hugging Face names, e.g. from
    ``model.safetensors``) as a LoadedModel in eval mode on the CPU. ``tokenizer``
    (``MarianTokenizer.from_folder``): its vocabularies name the tokens and its source pieces feed
    ``loaded.text_encoder()`` (MarianTokenizer's ids, ``</s>`` last); without it tokens are numbered
    placeholders. Raises ValueError naming what does not fit."""
    config = marian_config(hf_config)
    vocab, target_vocab = _vocabularies(tokenizer, config)
    state = marian_state(weights, config)
    model = EncoderDecoder(config)
    missing, unexpected = model.load_state_dict(state, strict=False)
    tied = {"generator.weight"} if config.tie_output_embedding else set()
    if set(missing) - tied or unexpected:
        message = f"The weights do not fit config.json: missing {sorted(missing)[:3]}, unexpected {unexpected[:3]}."
        raise CodedError("config_mismatch", message, file="config.json")
    _share_source_table(model, config)
    notes = () if tokenizer is not None else ("No source.spm / vocab.json: tokens are shown as numbered ids.",)
    return LoadedModel(
        model.eval(), config, vocab, target_vocab, name, "huggingface-marian", notes=notes, splitter=tokenizer
    )


def _vocabularies(tokenizer: MarianTokenizer | None, config: ModelConfig) -> tuple[Vocab, Vocab]:
    """(source, target) vocabularies, checked against the sizes of the weights."""
    if tokenizer is None:
        source = placeholder_vocab(config.vocab_size, config)
        same = config.target_vocab_size == config.vocab_size
        return source, source if same else placeholder_vocab(config.target_vocab_size, config)
    for side, vocab, size in (
        ("vocab.json", tokenizer.vocab, config.vocab_size),
        ("the target vocabulary", tokenizer.target_vocab, config.target_vocab_size),
    ):
        if len(vocab) != size:
            message = (
                f"{side} has {len(vocab):,} pieces but the weights have {size:,} rows: keep the tokenizer "
                "files that came with this model."
            )
            raise CodedError("tokenizer_mismatch", message, file=side, tokens=f"{len(vocab):,}", rows=f"{size:,}")
    for token, index in (("<pad>", config.pad_id), ("</s>", config.eos_id)):
        if tokenizer.vocab.id_to_token(index) != token:
            raise ValueError(f"config.json puts {token} at id {index}, vocab.json does not: keep the files together.")
    return tokenizer.vocab, tokenizer.target_vocab


def _share_source_table(model: EncoderDecoder, config: ModelConfig) -> None:
    """One table for both sides when the file has one (Marian's ``shared``): saves a copy of the
    largest tensor (opus-mt: 58k × 512 floats, 119 MB)."""
    source, target = model.encoder.embedding.tokens, model.decoder.embedding.tokens
    if source.weight.shape == target.weight.shape and torch.equal(source.weight, target.weight):
        source.weight = target.weight
