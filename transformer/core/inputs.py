"""What goes into an analysis: texts tokenised for one model (:class:`EncodedInputs`), their size
before anything runs (:func:`weights_nbytes`), and ids padded into one batch (:func:`pad_ids`).

A caller that budgets a request reads these, then hands the same inputs to
:func:`transformer.analysis.analyze_encoded`, so every request is tokenised once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from .config import ModelConfig
from .loaded import LoadedModel
from .tokenizer import Encoded


@dataclass(frozen=True)
class EncodedInputs:
    """Texts tokenised for one model: what a caller budgets (``longest``, :func:`weights_nbytes`) and
    :func:`analyze_encoded` then runs, so each request is tokenised once. ``encoded[i]`` belongs to
    ``texts[i]``; ``limit``: the truncation length used; ``tokenize_ms``: what tokenising took."""

    texts: list[str]
    encoded: list[Encoded]
    limit: int
    tokenize_ms: float = 0.0

    @property
    def longest(self) -> int:
        """Tokens of the longest input after truncation (at least 1)."""
        return max((len(e.ids) for e in self.encoded), default=1) or 1


def encode_texts(loaded: LoadedModel, texts: list[str], max_len: int | None = None):
    """Tokenise ``texts`` for ``loaded``: (encoded, limit); raises ValueError naming any input with no tokens."""
    inputs = encode_inputs(loaded, texts, max_len)
    return inputs.encoded, inputs.limit


def encode_inputs(loaded: LoadedModel, texts: list[str], max_len: int | None = None) -> EncodedInputs:
    """Tokenise ``texts`` for ``loaded`` (truncated at ``max_len``, else the model's chosen length);
    raises ValueError naming any input with no tokens."""
    if not texts:
        raise ValueError("No input: type at least one sentence.")
    start = time.perf_counter()
    cfg = loaded.config
    limit = min(max_len or cfg.default_max_tokens or cfg.max_len, cfg.max_len)
    if limit < 1:
        raise ValueError("The maximum length must be at least 1 token.")
    encoded = loaded.text_encoder().encode_batch(list(texts), limit, cfg.add_cls_token)
    empty = [i + 1 for i, e in enumerate(encoded) if not e.ids]
    if empty:
        raise ValueError(f"Input {', '.join(map(str, empty))} has no words: type some text.")
    return EncodedInputs(list(texts), encoded, limit, 1000 * (time.perf_counter() - start))


def weights_nbytes(config: ModelConfig, inputs: EncodedInputs) -> int:
    """Bytes of the arrays ``analyze_encoded(loaded, inputs)`` keeps: the weights, B × layers × heads × T²
    float32 (a decoder's self and cross attention counted as long as the longest source), and the
    encoder's queries and keys, 2 × B × layers × T × D float32, from which the pre-mask scores are
    computed when a view reads them (they are not kept). T: the longest input after truncation."""
    b, t = len(inputs.encoded), inputs.longest
    layers = config.num_layers + 2 * config.num_decoder_layers
    return 4 * b * (layers * config.num_heads * t * t + 2 * config.num_layers * t * config.d_model)


def pad_ids(seqs: list[list[int]], pad_id: int) -> torch.Tensor:
    """Lists of ids -> (B, T_longest) int64, right-padded with ``pad_id``."""
    longest = max(1, max(len(s) for s in seqs))
    ids = torch.full((len(seqs), longest), pad_id, dtype=torch.long)
    for row, seq in enumerate(seqs):
        ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    return ids
