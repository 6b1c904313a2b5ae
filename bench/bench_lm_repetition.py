"""How much a language model's greedy continuations repeat themselves: the share of repeated 4-grams.

Run: python bench/bench_lm_repetition.py --models assets/models/review-lm [other folders] [--out results.json]

Prompts: the first words of 50 validation reviews per language (the language models' own held-out
documents, ``transformer.lm.data``: never trained on), 8 words of English, 4 of Korean (its reviews are
short), the same prompts for every model. Each is continued greedily by 50 tokens (``generate``, the
key/value cache on). A continuation's repeated-4-gram share is 1 - distinct 4-grams / 4-grams over its
50 new token ids: 0 for text that never repeats a 4-gram, near 1 for a loop ("a good movie. The acting
is a good movie. The acting is ..."). Prints the mean per language and model, and one example each.
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch
from shared import ROOT  # noqa: F401  (puts the repository on sys.path)

from transformer.bundle import load_bundle
from transformer.core.bpe import load_tokenizer
from transformer.core.bpe_text import decode, encode_prompt
from transformer.lm.data import load_corpus
from transformer.lm.decode import generate

PROMPTS_PER_LANGUAGE = 50
NEW_TOKENS = 50
WORDS = {"en": 8, "ko": 4}


def repeated_share(ids: list[int], n: int = 4) -> float:
    """1 - distinct n-grams / n-grams of ``ids`` (0 when there are fewer than n + 1 ids)."""
    grams = [tuple(ids[i : i + n]) for i in range(len(ids) - n + 1)]
    return 1.0 - len(set(grams)) / len(grams) if len(grams) > 1 else 0.0


def prompts() -> dict[str, list[str]]:
    """The first words of the first 50 validation reviews (of at least that many words) per language."""
    corpus = load_corpus()
    out = {}
    for lang, docs in corpus.val.items():
        long_enough = [d.split() for d in docs if len(d.split()) > WORDS[lang]]
        out[lang] = [" ".join(words[: WORDS[lang]]) for words in long_enough[:PROMPTS_PER_LANGUAGE]]
    return out


def measure(folder: str, texts: dict[str, list[str]]) -> dict:
    loaded = load_bundle(folder)
    tok = load_tokenizer(folder)
    result = {}
    for lang, items in texts.items():
        shares, example = [], None
        for text in items:
            prompt = encode_prompt(tok, text, loaded.config.max_len)
            new = generate(loaded.model, prompt.ids, NEW_TOKENS).ids[len(prompt.ids) :]
            shares.append(repeated_share(new))
            example = example or {"prompt": text, "continuation": decode(tok, new)}
        result[lang] = {
            "mean_repeated_4gram_share": round(statistics.mean(shares), 4),
            "continuations_with_any_repeat": round(sum(s > 0 for s in shares) / len(shares), 4),
            "example": example,
        }
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", default=["assets/models/review-lm"])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    texts = prompts()
    results = {folder: measure(folder, texts) for folder in args.models}
    report = {
        "method": f"greedy, {NEW_TOKENS} new tokens after each of {PROMPTS_PER_LANGUAGE} prompts per language "
        f"(the first {WORDS['en']} English / {WORDS['ko']} Korean words of validation reviews); "
        "repeated-4-gram share = 1 - distinct/all 4-grams of the new token ids",
        "prompts": texts,
        "results": results,
    }
    for folder, by_lang in results.items():
        for lang, r in by_lang.items():
            print(f"{folder} {lang}: repeated 4-grams {r['mean_repeated_4gram_share']:.3f}; e.g. {r['example']}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(report, f, ensure_ascii=False, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
