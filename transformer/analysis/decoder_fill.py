"""Fill in the blank with a decoder-only language model (SmolLM2, GPT-2): it reads left to right, so it
cannot look past the blank while it guesses. The way a decoder can fill a blank:

1. candidates: the most likely next tokens after the words before the blank (a bounded top-k of one
   next-token distribution), each that starts a word completed into a whole word by the model's own
   likeliest next pieces (" cin" -> " cinematography", " " -> " 1999");
2. each candidate put into the whole sentence, and the whole sentence scored by the model: the sum of
   the log-probabilities of all its tokens, so the words after the blank count too;
3. the candidates ranked by that score.

Cost is bounded by construction: the prefix is run once (its keys and values kept), the candidates
(at most ``pool``) run after it in one batch, and every vocabulary-wide step holds at most
``max(pool, CHUNK)`` rows of logits (never tokens x vocabulary)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..core.bpe import EOT
from ..core.layers import LayerCache
from ..core.loaded import LoadedModel
from ..core.masks import layer_look_ahead_mask
from ..core.multihead import KeyValueCache

BLANK = "[MASK]"  # how the blank is written (the masked models' spelling, so one sentence serves both)
TOP_K = 5  # candidates shown
POOL = 24  # next tokens read at the blank, before those that do not start a word are left out
MAX_PIECES = 6  # pieces one candidate word may have (" 1999" is five)
CHUNK = 64  # positions whose logits are formed at once when the prefix is scored


@dataclass(frozen=True)
class Candidate:
    """One word for the blank. ``score``: log p(the whole sentence with this word), natural log, summed
    over every token; ``before``/``word``/``after``: its parts (the prefix's, the same for every
    candidate; the word's pieces; the words after the blank given the word); ``left_rank``: 1-based rank
    of its first piece in the next-token distribution at the blank (what the left side alone says)."""

    word: str
    ids: tuple[int, ...]
    score: float
    before: float
    word_logp: float
    after: float
    left_rank: int
    left_prob: float


@dataclass(frozen=True)
class DecoderFill:
    """The sentence's parts as the model read them and the candidates, best sentence score first."""

    before_ids: list[int]
    after_ids: list[int]
    candidates: list[Candidate]
    scored: int  # candidates whose sentence was scored (the best ``top_k`` of them are kept)

    def ranked_words(self) -> list[str]:
        return [c.word for c in self.candidates]


def split_blank(text: str, blank: str = BLANK) -> tuple[str, str]:
    """(before, after) the one blank of ``text``; ValueError when there is none or more than one."""
    count = text.count(blank)
    if count != 1:
        raise ValueError(f"A decoder fills one blank at a time: write {blank} once (found {count}).")
    before, after = text.split(blank)
    return before, after


def _hidden(model, ids: torch.Tensor, cache: list[LayerCache]) -> torch.Tensor:
    """Hidden states (B, T_new, D) after the final norm for the new tokens ``ids`` (B, T_new) after the
    cached ones; the cache grows by them. ``transformer.lm.cache.forward_cached`` without the output layer
    (so no (B, T_new, V) logits are formed)."""
    past = cache[0].length
    if past + ids.shape[1] > model.config.max_len:
        raise ValueError(f"{past + ids.shape[1]} tokens are beyond this model's context of {model.config.max_len}.")
    x, _ = model.embedding(ids, offset=past)
    for i, (layer, layer_cache) in enumerate(zip(model.layers, cache)):
        mask = layer_look_ahead_mask(model.config, i, ids.shape[1], ids.device, past=past)
        x, _ = layer(x, mask, False, None, cache=layer_cache)
    return model.final_norm(x)


def _repeated(cache: list[LayerCache], batch: int) -> list[LayerCache]:
    """A copy of a batch-1 cache for ``batch`` rows (the prefix's keys and values under every candidate)."""
    out = []
    for layer in cache:
        keys, values = layer.self_attn.current()
        kv = KeyValueCache(keys=keys.repeat(batch, 1, 1, 1), values=values.repeat(batch, 1, 1, 1), length=layer.length)
        out.append(LayerCache(self_attn=kv))
    return out


def _log_probs(model, hidden: torch.Tensor) -> torch.Tensor:
    """hidden (N, D) -> log-probabilities (N, V) over the vocabulary (N is at most max(pool, CHUNK))."""
    return torch.log_softmax(model.output(hidden).float(), dim=-1)


def _prefix_logp(model, hidden: torch.Tensor, ids: list[int]) -> float:
    """Sum of log p(ids[t + 1] | ids[: t + 1]) over the prefix; hidden (T, D), CHUNK positions at a time."""
    total = 0.0
    targets = torch.tensor(ids[1:], device=hidden.device)
    for start in range(0, len(targets), CHUNK):
        rows = _log_probs(model, hidden[start : start + CHUNK])
        total += float(rows.gather(1, targets[start : start + CHUNK, None]).sum())
    return total


def _starts_word(piece: str, spaced: bool) -> bool:
    """A piece that may begin the blank's word: after a space, a space then a letter or digit (or a bare
    space, digits follow); at the start of the text or glued to the previous word, a letter or digit."""
    if spaced:
        return piece.startswith(" ") and (piece == " " or piece[1:2].isalnum())
    return piece[:1].isalnum()


def _continues_word(piece: str) -> bool:
    return piece[:1].isalnum()


def _first_pieces(model, tok, last_hidden, spaced: bool, pool: int) -> list[tuple[int, int, float]]:
    """(id, 1-based rank, probability) of the word-starting pieces among the ``pool`` likeliest next
    tokens at the blank (``last_hidden`` (D,): the prefix's last position)."""
    probs = torch.softmax(model.output(last_hidden).float(), dim=-1)  # (V,)
    top = probs.topk(min(pool, probs.shape[-1]))
    chosen = [(int(i), r + 1, float(p)) for r, (p, i) in enumerate(zip(top.values, top.indices))]
    return [c for c in chosen if _starts_word(tok.decode([c[0]]), spaced)]


def _padded(seqs: list[list[int]], device) -> torch.Tensor:
    """(K, W) ids, each row right-padded with its own last id (a causal model's earlier positions do not
    see what comes after them)."""
    width = max(len(s) for s in seqs)
    return torch.tensor([s + [s[-1]] * (width - len(s)) for s in seqs], device=device)


def _grown(model, tok, cache, words: list[list[int]], nexts: list[int]) -> list[list[int]]:
    """``words`` grown by their likeliest next pieces (``nexts``: the first of them) while those continue
    the word, at most MAX_PIECES pieces each; the growing words run in one batch after the prefix."""
    words = [list(w) for w in words]
    active = list(range(len(words)))
    while active:
        growing = [n for n, nxt in zip(active, nexts) if len(words[n]) < MAX_PIECES and _continues(tok, nxt)]
        for n, nxt in zip(active, nexts):
            if n in growing:
                words[n].append(nxt)
        active = growing
        if not active:
            break
        ids = _padded([words[n] for n in active], cache[0].self_attn.keys.device)
        hidden = _hidden(model, ids, _repeated(cache, len(active)))  # (A, W, D)
        last = hidden[torch.arange(len(active)), torch.tensor([len(words[n]) - 1 for n in active])]
        nexts = _log_probs(model, last).argmax(-1).tolist()
    return words


def _continues(tok, piece_id: int) -> bool:
    """A piece that continues the word it follows (no space or punctuation before it)."""
    return tok.decode([piece_id])[:1].isalnum()


def start_id(tok) -> int | None:
    """The token read before the text: ``<|endoftext|>``, which separates the documents SmolLM2 and GPT-2
    were pretrained on (so the sentence's first word has a probability too); None when the tokenizer has none."""
    return tok.token_to_id(EOT)


@torch.no_grad()
def fill_blank_decoder(loaded: LoadedModel, text: str, top_k: int = TOP_K, pool: int = POOL) -> DecoderFill:
    """The ``top_k`` best candidates for the one blank of ``text``, by the model's score of the whole
    sentence read after :func:`start_id`. ValueError when the text has no blank or several, or is longer
    than the model's context."""
    model, tok = loaded.model, loaded.lm_tokenizer
    start = start_id(tok)
    before, after = split_blank(text)
    head = before.rstrip()
    before_ids = ([start] if start is not None else []) + (tok.encode(head).ids if head else [])
    if not before_ids:
        raise ValueError("The blank is the text's first word and this model has no start token to read before it.")
    after_ids = tok.encode(after).ids if after.strip() else []
    if len(before_ids) + MAX_PIECES + len(after_ids) > model.config.max_len:
        raise ValueError(f"The text is longer than this model's context of {model.config.max_len} tokens.")
    cache = [LayerCache() for _ in model.layers]
    hidden = _hidden(model, torch.tensor([before_ids], device=next(model.parameters()).device), cache)[0]  # (P, D)
    firsts = _first_pieces(model, tok, hidden[-1], bool(head) and head != before, pool)
    words = [[i] for i, _, _ in firsts]
    scores = _sentence_scores(model, cache, hidden[-1], words, after_ids) if words else []
    longer = [n for n, (_, _, nxt) in enumerate(scores) if _continues(tok, nxt) or tok.decode(words[n]) == " "]
    if longer:
        grown = _grown(model, tok, cache, [words[n] for n in longer], [scores[n][2] for n in longer])
        for n, word, score in zip(longer, grown, _sentence_scores(model, cache, hidden[-1], grown, after_ids)):
            words[n], scores[n] = word, score
    prefix = _prefix_logp(model, hidden, before_ids)
    found: dict[tuple[int, ...], Candidate] = {}
    for word, (word_logp, after_logp, _), (_, rank, prob) in zip(words, scores, firsts):
        shown = tok.decode(word).strip()
        if shown and tuple(word) not in found:  # two first pieces may grow into the same word: the likelier kept
            found[tuple(word)] = Candidate(shown, tuple(word), prefix + word_logp + after_logp, prefix, word_logp,
                                           after_logp, rank, prob)  # fmt: skip
    ranked = sorted(found.values(), key=lambda c: -c.score)
    return DecoderFill(before_ids, after_ids, ranked[:top_k], len(ranked))


def _sentence_scores(model, cache, last_hidden, words: list[list[int]], after_ids: list[int]) -> list[tuple]:
    """Per candidate word: (log p of its pieces, log p of the words after it, the likeliest piece right
    after the word), in one batch of word + after sequences run after the prefix's cache."""
    first = _log_probs(model, last_hidden[None])[0]  # (V,) at the blank
    seqs = [w + after_ids for w in words]
    ids = _padded(seqs, last_hidden.device)
    hidden = _hidden(model, ids, _repeated(cache, len(seqs)))  # (K, W, D)
    logp = torch.zeros(ids.shape)
    logp[:, 0] = first[ids[:, 0]]
    after_word = torch.zeros(len(seqs), dtype=torch.long)
    ends = torch.tensor([len(w) - 1 for w in words])
    for t in range(ids.shape[1]):  # position t predicts token t + 1: (K, V) at a time
        rows = _log_probs(model, hidden[:, t])
        after_word[ends == t] = rows[ends == t].argmax(-1)
        if t + 1 < ids.shape[1]:
            logp[:, t + 1] = rows.gather(1, ids[:, t + 1, None])[:, 0]
    return [
        (float(logp[k, : len(w)].sum()), float(logp[k, len(w) : len(s)].sum()), int(after_word[k]))
        for k, (w, s) in enumerate(zip(words, seqs))
    ]
