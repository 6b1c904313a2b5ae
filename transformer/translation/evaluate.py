"""Scores of a translation model on held-out pairs: exact match of greedy decoding and
per-layer per-head alignment accuracy of cross-attention (teacher-forced)."""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch

from ..core.model import EncoderDecoder
from ..core.tokenizer import Vocab
from . import dates
from . import lexicon as lx
from .alignment import head_accuracy
from .decode import greedy_batch
from .pairs import Pair
from .tasks import Task
from .vocab import alignment_tensor, batch_tensors


def strip(ids: list[int], eos_id: int, pad_id: int) -> list[int]:
    """Ids after ``<bos>`` up to (without) the first ``<eos>``."""
    out = []
    for i in ids[1:]:
        if i in (eos_id, pad_id):
            break
        out.append(i)
    return out


@torch.no_grad()
def evaluate(
    model: EncoderDecoder, task: Task, vocabs: tuple[Vocab, Vocab], n: int, seed: int, batch: int = 250
) -> dict:
    """{"test_pairs", "exact_match", "alignment_accuracy" [layer][head], "alignment_tokens", "best_head"}."""
    pairs = task.generate(n, seed, "test")
    cfg = model.config
    exact, crosses, golds = 0, [], []
    for i in range(0, n, batch):
        chunk = pairs[i : i + batch]
        src, tgt = batch_tensors(chunk, *vocabs)
        out_ids = greedy_batch(model, src, tgt.shape[1] + 4).tolist()
        exact += sum(strip(o, cfg.eos_id, cfg.target_pad_id) == t[1 : len(p.target) + 1]
                     for o, t, p in zip(out_ids, tgt.tolist(), chunk))  # fmt: skip
        cross = model(src, tgt[:, :-1], need_weights=True).cross  # L x (B, H, T_t, T_s)
        acc, count = head_accuracy(
            torch.stack([c.weights for c in cross], 1), alignment_tensor(chunk, tgt.shape[1] - 1)
        )
        crosses.append(acc * count)
        golds.append(count)
    per_head = sum(crosses) / sum(golds)  # (L, H)
    layer, head = divmod(int(per_head.argmax()), per_head.shape[1])
    return {
        "test_pairs": n,
        "exact_match": exact / n,
        "alignment_accuracy": [[round(float(a), 4) for a in row] for row in per_head],
        "alignment_tokens": int(sum(golds)),
        "best_head": {"layer": layer, "head": head, "accuracy": round(float(per_head[layer, head]), 4)},
    }


@torch.no_grad()
def exact_match(model: EncoderDecoder, vocabs: tuple[Vocab, Vocab], pairs: Sequence[Pair], batch: int = 250) -> float:
    """Share of ``pairs`` whose greedy decoding equals the target exactly."""
    cfg, exact = model.config, 0
    for i in range(0, len(pairs), batch):
        chunk = pairs[i : i + batch]
        src, tgt = batch_tensors(chunk, *vocabs)
        out_ids = greedy_batch(model, src, tgt.shape[1] + 4).tolist()
        exact += sum(strip(o, cfg.eos_id, cfg.target_pad_id) == t[1 : len(p.target) + 1]
                     for o, t, p in zip(out_ids, tgt.tolist(), chunk))  # fmt: skip
    return exact / max(1, len(pairs))


def held_out_groups(task: str, n: int, seed: int) -> dict[str, list[Pair]]:
    """Held-out pairs by input format. dates: ``n`` pairs in each of :data:`dates.FORMATS`;
    word order: ``n`` held-out pairs sorted into the (overlapping) shapes they have, and the nouns
    that the first lexicon only had as subjects (as objects) or only as objects (as subjects)."""
    rng = random.Random(seed)
    if task == "dates":
        held = dates.held_out_months()
        return {fmt: [dates.sample_in_format(rng, fmt, "test", held) for _ in range(n)] for fmt in dates.FORMATS}
    from . import word_order

    pairs = word_order.generate(n, seed, "test")
    adjectives, places = {e for e, _ in lx.ADJECTIVES}, {p for p, _, _, _ in lx.PLACES}
    times, old_subjects, old_objects = {e for e, _ in lx.TIMES}, dict(lx.SUBJECTS), dict(lx.OBJECTS)
    verb_at = {p: next(i for i, w in enumerate(p.source) if w in dict(lx.VERBS)) for p in pairs}
    groups = {
        "plain (article noun verb article noun)": [p for p in pairs if len(p.source) == 5],
        "with adjectives": [p for p in pairs if adjectives & set(p.source)],
        "with a place": [p for p in pairs if places & set(p.source)],
        "time first": [p for p in pairs if p.source[0] in times],
        "time last": [p for p in pairs if p.source[-1] in times],
        "object that the first lexicon had only as a subject": [
            p for p in pairs if p.source[verb_at[p] + 1 :] and _object(p, verb_at[p]) in old_subjects
        ],
        "subject that the first lexicon had only as an object": [
            p for p in pairs if _subject(p, verb_at[p]) in old_objects
        ],
    }
    return {name: group for name, group in groups.items() if group}


def _subject(pair: Pair, verb: int) -> str:
    return pair.source[verb - 1]


def _object(pair: Pair, verb: int) -> str:
    nouns = {e for e, _ in lx.NOUNS}
    return next(w for w in pair.source[verb + 1 :] if w in nouns)


def scores_by_group(model: EncoderDecoder, vocabs: tuple[Vocab, Vocab], groups: dict[str, list[Pair]]) -> dict:
    """{group: {"pairs", "exact_match", "example"}} for :func:`held_out_groups`."""
    return {
        name: {
            "pairs": len(pairs),
            "exact_match": round(exact_match(model, vocabs, pairs), 4),
            "example": pairs[0].text,
        }
        for name, pairs in groups.items()
    }
