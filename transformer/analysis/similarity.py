"""Sentence similarity with a text encoder: each sentence's embedding, their cosine similarities, and
which tokens of one sentence are closest to which tokens of another.

A sentence embedding pools the encoder's last-layer token states over the sentence's real tokens
(``[CLS]`` and ``[SEP]`` included, as sentence-transformers does: they are not padding). How it pools
is the folder's own recipe (:func:`read_recipe`: ``modules.json``, ``1_Pooling/config.json``,
``sentence_bert_config.json``); a folder without one gets the mean, normalised. Each sentence runs
alone (a batch of one), so no padding enters any state and memory is bounded by one sentence.

Shapes: N sentences, n_i tokens of sentence i, D the model width.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..core.inputs import encode_inputs
from ..core.loaded import LoadedModel
from .head_roles import is_special_token

POOLINGS = ("mean", "cls", "max", "mean_sqrt_len")
# 1_Pooling/config.json's flags -> our name; sentence-transformers reads them in this order
_POOLING_FLAGS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len",
}


@dataclass(frozen=True)
class SentenceRecipe:
    """How token states become one sentence embedding: ``pooling`` (one of POOLINGS), ``normalize``
    (L2, as a Normalize module does), ``max_tokens`` (the truncation the folder asks for, 0: the
    model's own length) and ``source`` (the files it was read from; empty: the default)."""

    pooling: str = "mean"
    normalize: bool = True
    max_tokens: int = 0
    source: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.pooling not in POOLINGS:
            raise ValueError(f"Unknown pooling {self.pooling!r}: use one of {', '.join(POOLINGS)}.")


def read_recipe(folder: str | Path) -> SentenceRecipe:
    """The sentence-transformers recipe of ``folder``: its Pooling module's config, whether a Normalize
    module follows, and ``max_seq_length``; the default (mean, normalised) where a file is missing."""
    folder = Path(folder)
    modules_file = folder / "modules.json"
    if not modules_file.is_file():
        return SentenceRecipe()
    modules = json.loads(modules_file.read_text("utf-8"))
    types = {m.get("type", "").rsplit(".", 1)[-1]: m.get("path", "") for m in modules}
    pooling, sources = "mean", ["modules.json"]
    if "Pooling" in types:
        config_file = folder / types["Pooling"] / "config.json"
        if config_file.is_file():
            flags = json.loads(config_file.read_text("utf-8"))
            chosen = [name for flag, name in _POOLING_FLAGS.items() if flags.get(flag)]
            if len(chosen) != 1:
                raise ValueError(f"{config_file}: pools in {len(chosen)} ways at once ({chosen}); one is supported.")
            pooling = chosen[0]
            sources.append(str(config_file.relative_to(folder)))
    max_tokens = 0
    bert_config = folder / "sentence_bert_config.json"
    if bert_config.is_file():
        max_tokens = int(json.loads(bert_config.read_text("utf-8")).get("max_seq_length") or 0)
        sources.append(bert_config.name)
    return SentenceRecipe(pooling, "Normalize" in types, max_tokens, tuple(sources))


def pool_states(states: torch.Tensor, pooling: str) -> torch.Tensor:
    """states (n, D) of one sentence's real tokens -> (D,)."""
    if pooling == "cls":
        return states[0]
    if pooling == "max":
        return states.amax(0)
    total = states.sum(0)
    return total / (states.shape[0] if pooling == "mean" else states.shape[0] ** 0.5)


def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rows of a (n, D) against rows of b (m, D) -> (n, m) cosine similarities (a zero row gives 0)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    a = a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=-1, keepdims=True), 1e-12)
    return a @ b.T


@dataclass(frozen=True)
class TokenMatch:
    """Tokens of sentence ``a`` against those of sentence ``b``: ``tokens_a`` (n), ``tokens_b`` (m),
    ``positions_a``/``positions_b`` their places in each sentence's tokens, ``cosine`` (n, m) of their
    last-layer states; ``best_for_a`` (n,) the index into ``tokens_b`` closest to each token of a (and
    ``best_for_b`` (m,) the reverse), with those cosines in ``best_for_a_score``/``best_for_b_score``."""

    tokens_a: list[str]
    tokens_b: list[str]
    positions_a: list[int]
    positions_b: list[int]
    cosine: np.ndarray
    best_for_a: np.ndarray
    best_for_a_score: np.ndarray
    best_for_b: np.ndarray
    best_for_b_score: np.ndarray


@dataclass(frozen=True)
class SimilarityResult:
    """N sentences: ``tokens[i]`` what the model saw (``truncated[i]``: cut to ``limit`` tokens from
    ``original_lengths[i]``); ``states[i]`` (n_i, D) float32 last-layer token states; ``embeddings``
    (N, D) float32 pooled by ``recipe`` (unit length when it normalises); ``similarity`` (N, N)
    float64 cosine of the embeddings (1 on the diagonal)."""

    texts: list[str]
    tokens: list[list[str]]
    truncated: list[bool]
    original_lengths: list[int]
    limit: int
    states: list[np.ndarray]
    embeddings: np.ndarray
    similarity: np.ndarray
    recipe: SentenceRecipe

    def token_match(self, a: int, b: int, words_only: bool = True) -> TokenMatch:
        """Sentence ``a``'s tokens against sentence ``b``'s; ``words_only`` leaves out the special
        tokens the tokenizer adds ([CLS], [SEP], ...) unless a sentence has nothing else."""
        pos_a, pos_b = _kept(self.tokens[a], words_only), _kept(self.tokens[b], words_only)
        cosine = cosine_matrix(self.states[a][pos_a], self.states[b][pos_b])
        rows, cols = np.arange(len(pos_a)), np.arange(len(pos_b))
        best_a, best_b = cosine.argmax(1), cosine.argmax(0)
        return TokenMatch(
            [self.tokens[a][i] for i in pos_a],
            [self.tokens[b][j] for j in pos_b],
            pos_a,
            pos_b,
            cosine,
            best_a,
            cosine[rows, best_a],
            best_b,
            cosine[best_b, cols],
        )


def _kept(tokens: list[str], words_only: bool) -> list[int]:
    words = [i for i, tok in enumerate(tokens) if not (words_only and is_special_token(tok))]
    return words or list(range(len(tokens)))


def _encoder(loaded: LoadedModel):
    encoder = getattr(loaded.model, "encoder", None)
    if loaded.config.kind != "classifier" or encoder is None:
        raise ValueError(
            f"Sentence similarity needs a text encoder; this model is a {loaded.config.kind}. "
            "Choose an encoder such as all-minilm-l6-v2."
        )
    return encoder


@torch.no_grad()
def sentence_similarity(
    loaded: LoadedModel, texts: list[str], recipe: SentenceRecipe | None = None, max_len: int | None = None
) -> SimilarityResult:
    """Embed ``texts`` with ``loaded``'s encoder (its last-layer token states pooled by ``recipe``,
    default :class:`SentenceRecipe`) and compare every pair. Truncation: ``max_len``, else the recipe's
    ``max_tokens``, else the model's length. Raises ValueError for no text, a text with no tokens,
    or a model that is not a text encoder."""
    recipe = recipe or SentenceRecipe()
    encoder = _encoder(loaded)
    inputs = encode_inputs(loaded, list(texts), max_len or recipe.max_tokens or None)
    device = next(loaded.model.parameters()).device
    if loaded.model.training:
        raise ValueError("sentence_similarity() needs a model in eval mode (call model.eval() once after loading).")
    states, pooled = [], []
    for encoded in inputs.encoded:
        ids = torch.tensor([encoded.ids], device=device)  # (1, n): one sentence, no padding
        keep = torch.ones_like(ids, dtype=torch.bool)  # every position is a real token, whatever its id
        hidden = encoder(ids, keep=keep).hidden[0].float()  # (n, D)
        vector = pool_states(hidden, recipe.pooling)
        if recipe.normalize:
            vector = vector / vector.norm().clamp(min=1e-12)
        states.append(hidden.cpu().numpy())
        pooled.append(vector.cpu().numpy())
    embeddings = np.stack(pooled)
    return SimilarityResult(
        texts=list(inputs.texts),
        tokens=[e.tokens for e in inputs.encoded],
        truncated=[e.truncated for e in inputs.encoded],
        original_lengths=[e.original_length for e in inputs.encoded],
        limit=inputs.limit,
        states=states,
        embeddings=embeddings,
        similarity=cosine_matrix(embeddings, embeddings),
        recipe=recipe,
    )
