"""The merges a SentencePiece vocabulary implies, rebuilt from its scores (GGUF files of the Llama and Gemma
families carry scores, not merges); bounded: no step is quadratic in a token's length."""

from __future__ import annotations

from bisect import bisect_left


def merges_from_scores(vocab: dict[str, int], scores: dict[str, float]) -> list[tuple[str, str]]:
    """The merges a SentencePiece vocabulary implies: every split of a token into two tokens, best score
    first (ties: shorter left piece, then shorter right piece first in the reversed order, as the
    reference's ``generate_merges`` orders them). Only the split points where both pieces have a length some
    token has are tried: a token of n characters costs n x (distinct token lengths), not n x n."""
    lengths = sorted({len(token) for token in vocab})  # a split's pieces have lengths some token has
    has_length = set(lengths)
    found = []
    for merge, score in scores.items():
        n = len(merge)
        local = [
            (merge[:i], merge[i:], score)
            for i in lengths[: bisect_left(lengths, n)]
            if i and n - i in has_length and merge[:i] in vocab and merge[i:] in vocab
        ]
        found.extend(sorted(local, key=lambda x: (vocab[x[0]], vocab[x[1]])))
    found.sort(key=lambda x: (x[2], len(x[0]), len(x[1])), reverse=True)
    return [(left, right) for left, right, _ in found]
