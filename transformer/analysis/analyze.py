"""One analysis call that every page, the CLI and notebooks read: :func:`analyze`.

It runs in eval mode without gradients and returns an :class:`AnalysisResult` of float32
numpy arrays. Nothing is kept on the model between calls.
"""

from __future__ import annotations

import dataclasses
import math
import time
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np
import torch

from ..core.attention import weights_buffer
from ..core.bpe_text import show_token
from ..core.inputs import EncodedInputs, encode_inputs, pad_ids
from ..core.loaded import LoadedModel
from ..core.tokenizer import TextEncoder
from .lm_inputs import encode_lm_inputs, is_language_model, run_language_model, top_next
from .records import (  # noqa: F401 - json_ready, prediction_entry, weights_warning: named here for their users
    LM_RECORD_TOP,
    _rounded,
    json_ready,
    lm_record_of,
    nonfinite_fields,
    prediction_entry,
    weights_warning,
)


@dataclass(frozen=True)
class InputAttention:
    """One input's attention weights without padding rows or columns: views into the result's arrays
    (copy what you keep, or the whole result stays alive). n source tokens, m decoder tokens.

    encoder (L, H, n, n) over ``source``; for encoder-decoder models ``decoder_self`` (L_d, H, m, m)
    over ``target`` (zero above the diagonal) and ``cross`` (L_d, H, m, n), decoder queries over
    source keys; None for other models."""

    source: list[str]
    encoder: np.ndarray
    target: list[str] | None = None
    decoder_self: np.ndarray | None = None
    cross: np.ndarray | None = None

    def parts(self) -> dict[str, np.ndarray]:
        """The weights there are, under the names of the CLI's ``attention`` record: encoder, decoder_self, cross."""
        both = {"decoder_self": self.decoder_self, "cross": self.cross}
        return {"encoder": self.encoder} | {name: w for name, w in both.items() if w is not None}


@dataclass(frozen=True)
class AnalysisResult:
    """Everything about one batch of inputs. B inputs, T = longest input (others padded),
    L layers, H heads, D model size, K labels.

    tokens[i], unknown[i]: the n_i tokens input i became (what the model saw) and which were
    out of vocabulary. ids (B, T) padded with the model's pad id; lengths (B,).
    padding_mask (B, 1, T, T) True where a query may attend.
    token_embeddings (B, T, D), positional_encodings (T, D), embeddings (B, T, D) their sum.
    attention (B, L, H, T, T) softmax weights after masking; queries and keys (B, L, H, T, d_k)
    each layer's per-head Q and K; ``scores`` (B, L, H, T, T) QKᵀ/√d_k before masking is
    computed from them when read (``scores_for(i)`` for one input), not kept: it would cost as
    much memory as ``attention`` again. logits (B, K), probabilities (B, len(label_names)).
    Encoder-decoder models fill the ``decoder_*`` and ``cross_attention`` (B, L, H, T_t, T)
    fields; classifiers leave them None (and vice versa for logits/probabilities); ``forced_targets``
    says whether the decoder's inputs were given (teacher forcing) or decoded greedily. An imported
    classifier whose head could not be mapped (``config.has_head`` False) has logits and
    probabilities None too.
    timings_ms: tokenize, forward, total.
    Decoder-only language models: ``attention`` is their causal self-attention (zero above the
    diagonal; ``padding_mask`` holds the look-ahead mask), tokens as ``inspect`` reads them (the start
    token a model trained here reads first; an imported model's own tokenizer), no logits or
    probabilities; ``next_token_ids`` (B, k) and ``next_token_probabilities`` (B, k) float64 are the
    k most likely tokens after each input's last token and ``next_tokens`` their text (None for other
    models); ``input_record`` writes the record ``inspect`` writes for such a model (the top next tokens,
    ``attention.decoder_self``).
    Calibration: ``probabilities`` are softmax(logits / temperature) with the model's fitted
    ``config.temperature`` (``calibration="none"``: temperature 1), the number the CLI and every
    page show; ``raw_probabilities`` (B, K) are softmax(logits), ``temperature`` the one applied.
    nonfinite: names of the fields above that hold NaN or ±inf (e.g. ``["attention", "logits",
    "probabilities"]``; empty when every number is finite): pages show what is finite and say
    so; ``prediction(i)`` is None for an input whose probabilities are not finite, and
    ``input_json`` writes null in place of each non-finite number. ``weights_nonfinite``: the
    model's weight tensors that hold NaN or ±inf (from the import).
    One input alone: ``input_attention(i)`` (its weights without padding), ``input_record(i)`` (its
    record in the CLI's JSON format; ``transformer.export`` writes it for the CLI and the app).
    """

    texts: list[str]
    tokens: list[list[str]]
    unknown: list[list[bool]]
    truncated: list[bool]
    original_lengths: list[int]
    ids: np.ndarray
    lengths: np.ndarray
    padding_mask: np.ndarray
    token_embeddings: np.ndarray
    positional_encodings: np.ndarray
    embeddings: np.ndarray
    attention: np.ndarray
    queries: np.ndarray
    keys: np.ndarray
    logits: np.ndarray | None
    probabilities: np.ndarray | None
    label_names: list[str]
    device: str
    dtype: str
    max_len: int
    timings_ms: dict[str, float]
    decoder_tokens: list[list[str]] | None = None
    decoder_self_attention: np.ndarray | None = None
    cross_attention: np.ndarray | None = None
    nonfinite: list[str] = field(default_factory=list)
    weights_nonfinite: list[str] = field(default_factory=list)
    raw_probabilities: np.ndarray | None = None
    temperature: float = 1.0
    forced_targets: bool = False
    next_token_ids: np.ndarray | None = None
    next_token_probabilities: np.ndarray | None = None
    next_tokens: list[list[str]] | None = None

    @property
    def num_layers(self) -> int:
        return self.attention.shape[1]

    @property
    def num_heads(self) -> int:
        return self.attention.shape[2]

    def attention_for(self, index: int) -> np.ndarray:
        """(L, H, n, n) encoder weights of input ``index`` alone, without padding rows or columns."""
        n = int(self.lengths[index])
        return self.attention[index, :, :, :n, :n]

    def input_attention(self, index: int) -> InputAttention:
        """Every attention of input ``index`` alone (encoder; decoder self and cross where there is a
        decoder), without padding: the one place the batch's padded arrays are cut per input."""
        source = self.tokens[index]
        if self.cross_attention is None or self.decoder_tokens is None:
            return InputAttention(source, self.attention_for(index))
        n, target = int(self.lengths[index]), self.decoder_tokens[index]
        m = len(target)
        return InputAttention(
            source,
            self.attention_for(index),
            target,
            self.decoder_self_attention[index, :, :, :m, :m],
            self.cross_attention[index, :, :, :m, :n],
        )

    @property
    def scores(self) -> np.ndarray:
        """(B, L, H, T, T) float32 QKᵀ/√d_k before masking, computed now from ``queries`` and ``keys``
        (as the forward pass computed them): read it once and keep what you need."""
        return _scores(self.queries, self.keys)

    def scores_for(self, index: int) -> np.ndarray:
        """(L, H, n, n) pre-mask scores of input ``index`` alone, computed now."""
        n = int(self.lengths[index])
        return _scores(self.queries[index, :, :, :n], self.keys[index, :, :, :n])

    def predicted_label(self, index: int) -> str | None:
        if self.probabilities is None:
            return None
        return self.label_names[int(self.probabilities[index].argmax())]

    def prediction(self, index: int) -> dict | None:
        """{'label', 'probabilities', 'raw_probabilities', 'temperature'} for input ``index``; None
        without probabilities or when they are not finite."""
        if self.probabilities is None:
            return None
        raw = None if self.raw_probabilities is None else self.raw_probabilities[index]
        return prediction_entry(self.label_names, self.probabilities[index], raw, self.temperature)

    def nonfinite_warning(self) -> str:
        """One sentence naming the non-finite outputs (and weights) for JSON records; '' when all is finite."""
        if not self.nonfinite:
            return ""
        weights = f" Weights affected: {', '.join(self.weights_nonfinite[:5])}." if self.weights_nonfinite else ""
        return f"NaN or infinite values in: {', '.join(self.nonfinite)}; they are written as null.{weights}"

    def input_record(
        self, index: int, attention: bool = True, line: int | None = None, translation: dict | None = None
    ) -> dict:
        """Input ``index`` as one record of the CLI's JSON format (DESIGN.md), keys in the order they
        are written; the weights as float64 arrays rounded to 6 digits (NaN and ±inf kept: the writer,
        ``transformer.export``, writes them as null). ``attention`` False leaves the weights out;
        ``line``: the input's line in a text file; ``translation``: a translation task's check of the
        decoder's output (``transformer.translation.checks``), its problems added to the warnings."""
        if self.next_tokens is not None:
            return lm_record_of(self, index, attention, line)  # a language model: inspect's record
        n = int(self.lengths[index])
        record = {"text": self.texts[index]} | ({} if line is None else {"line": line})
        record |= {
            "tokens": self.tokens[index],
            "ids": [int(i) for i in self.ids[index, :n]],
            "truncated": bool(self.truncated[index]),
            "unknown": [bool(u) for u in self.unknown[index]],
            "prediction": self.prediction(index),
        }
        if self.decoder_tokens is not None:
            record["decoder_tokens"] = self.decoder_tokens[index]
        if translation is not None:
            record["translation"] = translation
        if attention:
            record["attention"] = {k: _rounded(w) for k, w in self.input_attention(index).parts().items()}
        warnings = self._warnings(translation)
        return record | ({"warnings": warnings} if warnings else {})

    def _warnings(self, translation: dict | None) -> list[str]:
        """The record's warnings: non-finite outputs say only that; else the translation's problems
        and the model's non-finite weights."""
        if self.nonfinite:
            return [self.nonfinite_warning()]
        problems = [p["message"] for p in translation["problems"]] if translation is not None else []
        return problems + ([weights_warning(self.weights_nonfinite)] if self.weights_nonfinite else [])

    def input_json(self, index: int, attention: bool = True) -> dict:
        """:meth:`input_record` as plain Python values for ``json.dumps`` (nested lists, None for NaN and ±inf)."""
        return json_ready(self.input_record(index, attention))


def _scores(queries: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """(..., T_q, d_k) and (..., T_k, d_k) -> (..., T_q, T_k) float32 QKᵀ/√d_k, in torch as the model does."""
    q, k = torch.from_numpy(np.ascontiguousarray(queries)), torch.from_numpy(np.ascontiguousarray(keys))
    return (q @ k.transpose(-2, -1) / math.sqrt(max(1, q.shape[-1]))).numpy()


def _to_numpy(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().float().cpu().numpy()


def model_device(loaded: LoadedModel) -> torch.device:
    return next(loaded.model.parameters()).device


def _precision_context(loaded: LoadedModel, device: torch.device):
    """Reduced precision only on CUDA and only where the config allows it."""
    if device.type == "cuda" and loaded.config.allow_reduced_precision:
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.autocast("cuda", dtype=dtype), str(dtype).replace("torch.", "")
    return nullcontext(), "float32"


def analyze(
    loaded: LoadedModel,
    texts: list[str],
    max_len: int | None = None,
    targets: list[str] | None = None,
    calibration: str = "temperature",
) -> AnalysisResult:
    """Run ``texts`` through the model on the device it lives on and collect every intermediate.

    max_len: truncation (default: the model's chosen length). targets: decoder inputs for
    encoder-decoder models (teacher-forced); without them the decoder runs greedily.
    calibration: "temperature" (the model's fitted temperature) or "none" (raw softmax).
    """
    calibration_temperature(loaded, calibration)  # a wrong name fails before any work
    return analyze_encoded(loaded, encode_for(loaded, texts, max_len), targets, calibration)


def encode_for(loaded: LoadedModel, texts: list[str], max_len: int | None = None) -> EncodedInputs:
    """``texts`` tokenised as :func:`analyze` runs them: a language model's prompts
    (:func:`encode_lm_inputs`), else the model's text encoder (:func:`encode_inputs`)."""
    return (
        encode_lm_inputs(loaded, texts, max_len) if is_language_model(loaded) else encode_inputs(loaded, texts, max_len)
    )


@torch.no_grad()
def analyze_encoded(
    loaded: LoadedModel, inputs: EncodedInputs, targets: list[str] | None = None, calibration: str = "temperature"
) -> AnalysisResult:
    """:func:`analyze` of inputs already tokenised (:func:`encode_inputs`): the ids a caller budgeted are the ones run."""
    temperature = calibration_temperature(loaded, calibration)
    encoded, start = inputs.encoded, time.perf_counter()
    device = model_device(loaded)
    ids = pad_ids([e.ids for e in encoded], loaded.config.pad_id).to(device)
    # which positions are real comes from the tokenizer (each input's length), never from comparing ids with a
    # pad id: a model's pad id can be a token its tokenizer gives for text (GPT-2's <|endoftext|>)
    keep = real_positions([len(e.ids) for e in encoded], ids.shape[1], device)
    tokenized = time.perf_counter()
    tokenize_ms = inputs.tokenize_ms + 1000 * (tokenized - start)  # tokenising, then padding onto the device
    model = loaded.model
    if model.training:
        raise ValueError("analyze() needs a model in eval mode (call model.eval() once after loading).")
    context, dtype_name = _precision_context(loaded, device)
    with context:
        if loaded.config.kind == "encoder-decoder":
            out, enc, enc_buffer, extra = _run_seq2seq(loaded, ids, targets)
            logits = probs = raw = None
        elif loaded.config.kind == "language-model":  # no class to predict: the next tokens instead
            cfg = loaded.config
            enc_buffer = _buffer(ids.shape[0], cfg.num_layers, cfg.num_heads, ids.shape[1], ids.shape[1], device)
            enc, next_probs = run_language_model(model, ids, keep, enc_buffer)
            next_ids, next_p = top_next(next_probs)
            shown = [[show_token(loaded.lm_tokenizer, int(i)) for i in row[:LM_RECORD_TOP]] for row in next_ids]
            extra = {"next_token_ids": next_ids, "next_token_probabilities": next_p, "next_tokens": shown}
            logits = probs = raw = None
        else:
            cfg = loaded.config
            enc_buffer = _buffer(ids.shape[0], cfg.num_layers, cfg.num_heads, ids.shape[1], ids.shape[1], device)
            out = model(ids, need_weights=True, weights_out=enc_buffer, keep=keep)
            enc, extra = out.encoder, {}
            logits = probs = raw = None  # a model without a head (config.has_head False) predicts nothing
            if out.logits is not None:
                logits, raw = _to_numpy(out.logits), _to_numpy(model.probabilities(out.logits))
                probs = raw if temperature == 1.0 else _to_numpy(model.probabilities(out.logits.float() / temperature))
    if device.type == "cuda":
        torch.cuda.synchronize()
    finished = time.perf_counter()
    result = AnalysisResult(
        texts=list(inputs.texts),
        tokens=[e.tokens for e in encoded],
        unknown=[e.unknown for e in encoded],
        truncated=[e.truncated for e in encoded],
        original_lengths=[e.original_length for e in encoded],
        ids=ids.cpu().numpy(),
        lengths=np.array([len(e.ids) for e in encoded]),
        padding_mask=enc.mask.cpu().numpy(),
        token_embeddings=_to_numpy(enc.embeddings.tokens),
        positional_encodings=_to_numpy(enc.embeddings.positions),
        embeddings=_to_numpy(enc.embeddings.combined),
        attention=_stack_layers([r.weights for r in enc.attention], ids.shape, enc_buffer),
        queries=_stack_layers([r.queries for r in enc.attention], ids.shape),
        keys=_stack_layers([r.keys for r in enc.attention], ids.shape),
        logits=logits,
        probabilities=probs,
        raw_probabilities=raw,
        temperature=temperature,
        label_names=list(loaded.config.label_names),
        device=str(device),
        dtype=dtype_name,
        max_len=inputs.limit,
        timings_ms={
            "tokenize": tokenize_ms,
            "forward": 1000 * (finished - tokenized),
            "total": tokenize_ms + 1000 * (finished - tokenized),
        },
        forced_targets=targets is not None and loaded.config.kind == "encoder-decoder",
        **extra,
    )
    return _with_nonfinite(loaded, result)


def calibration_temperature(loaded: LoadedModel, calibration: str = "temperature") -> float:
    """The temperature the logits are divided by: the model's fitted one, or 1 for "none"."""
    if calibration not in ("temperature", "none"):
        raise ValueError(f"Unknown calibration {calibration!r}: use 'temperature' or 'none'.")
    temperature = float(getattr(loaded.config, "temperature", 1.0)) if calibration == "temperature" else 1.0
    return temperature if math.isfinite(temperature) and temperature > 0 else 1.0


def _with_nonfinite(loaded: LoadedModel, result: AnalysisResult) -> AnalysisResult:
    """``result`` with ``nonfinite`` (and the model's non-finite weight names) filled in."""
    bad = nonfinite_fields(
        token_embeddings=result.token_embeddings, embeddings=result.embeddings, attention=result.attention
    )
    # scores are computed from queries and keys when read: flagged when those are not finite
    bad += [] if nonfinite_fields(queries=result.queries, keys=result.keys) == [] else ["scores"]
    bad += nonfinite_fields(
        logits=result.logits,
        probabilities=result.probabilities,
        decoder_self_attention=result.decoder_self_attention,
        cross_attention=result.cross_attention,
    )
    weights = list(getattr(loaded, "nonfinite_weights", ()))
    if not bad and not weights:
        return result
    return dataclasses.replace(result, nonfinite=bad, weights_nonfinite=weights)


def _buffer(b: int, layers: int, heads: int, t_q: int, t_k: int, device: torch.device) -> torch.Tensor | None:
    """The (B, L, H, T_q, T_k) float32 tensor the layers write their weights into (None without layers):
    it becomes the result's array itself, so no layer's weights are copied or stacked afterwards."""
    return weights_buffer(b, layers, heads, t_q, t_k, device=device) if layers else None


def _stack_layers(per_layer: list[torch.Tensor], ids_shape: torch.Size, buffer: torch.Tensor | None = None):
    """L tensors (B, H, T, ·) -> (B, L, H, T, ·) float32; a model with no layers gives (B, 0, 0, T, T).
    ``buffer``: the (B, L, H, T, ·) tensor the layers wrote them into (:func:`_buffer`), returned
    as it is (on a CPU shared with numpy, not copied)."""
    if not per_layer:
        b, t = ids_shape
        return np.zeros((b, 0, 0, t, t), dtype=np.float32)
    return _to_numpy(torch.stack(per_layer, dim=1) if buffer is None else buffer)


def real_positions(lengths: list[int], width: int, device: torch.device) -> torch.Tensor:
    """(B, width) bool, True at each input's first ``lengths[b]`` positions (its real tokens)."""
    return torch.arange(width, device=device)[None, :] < torch.tensor(lengths, device=device)[:, None]


def _run_seq2seq(loaded: LoadedModel, src: torch.Tensor, targets: list[str] | None):
    """Decoder inputs from ``targets`` (teacher forcing) or greedy decoding of each source."""
    model, cfg = loaded.model, loaded.config
    target_vocab = loaded.target_vocab or loaded.vocab
    if targets is not None:
        if len(targets) != src.shape[0]:
            raise ValueError(f"Got {src.shape[0]} sources but {len(targets)} targets.")
        # the target exactly as given, after the start token only where the model has one (never invented)
        start = [] if cfg.bos_id is None else [cfg.bos_id]
        if cfg.target_tokenizer == "characters":  # e.g. "2018-05-09" -> 2, 0, 1, 8, -, ...
            chars = [[target_vocab.token_to_id(c) for c in text if not c.isspace()] for text in targets]
            seqs = [(start + ids)[: cfg.max_len] for ids in chars]
        else:
            enc_t = TextEncoder(target_vocab).encode_batch(list(targets), cfg.max_len - len(start), False)
            seqs = [start + e.ids for e in enc_t]
    else:
        if cfg.bos_id is None:
            raise ValueError(
                "The target vocabulary has no start token, so the decoder cannot run on its own: give the "
                "decoder's input (--target), or name the start and end tokens (--bos, --eos)."
            )
        seqs = []
        for i in range(src.shape[0]):
            n = int((src[i] != cfg.pad_id).sum())
            # capped at 2n + 10 steps: a decoder that never emits eos (e.g. an untrained upload) would
            # otherwise run max_len steps (5000 for some tutorial checkpoints)
            seqs.append(model.greedy_decode(src[i : i + 1][:, :n], min(cfg.max_len, 2 * n + 10))[0].tolist())
    tgt = pad_ids(seqs, cfg.target_pad_id).to(src.device)
    (b, t_s), t_t, heads = src.shape, tgt.shape[1], cfg.num_heads
    buffers = (
        _buffer(b, cfg.num_layers, heads, t_s, t_s, src.device),
        _buffer(b, cfg.num_decoder_layers, heads, t_t, t_t, src.device),
        _buffer(b, cfg.num_decoder_layers, heads, t_t, t_s, src.device),
    )
    if any(buffer is None for buffer in buffers):
        buffers = (None, None, None)
    out = model(src, tgt, need_weights=True, weights_out=None if buffers[0] is None else buffers)
    extra = {
        "decoder_tokens": [[target_vocab.id_to_token(i) for i in s] for s in seqs],
        "decoder_self_attention": _stack_layers([r.weights for r in out.decoder_self], tgt.shape, buffers[1]),
        "cross_attention": _stack_layers([r.weights for r in out.cross], tgt.shape, buffers[2]) if out.cross else None,
    }
    return out, out.encoder, buffers[0], extra
