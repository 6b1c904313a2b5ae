"""Hostile GGUF files and chat templates (issue 56): time and peak memory of each, beside its anchor.

Run: python bench/bench_gguf_hostile.py [--repeats 3] [--out bench/results/gguf_hostile.json]

Three parts, each interleaved with its anchor in one run (the median of ``--repeats``):

1. Every file of the crafted corpus (tests/gguf_corpus.py) through ``load_model``, beside the good tiny
   file it was crafted from (which loads): wall seconds and the Python heap's peak (tracemalloc: numpy
   arrays included, the tokenizers library's Rust heap not), and the refusal code.
2. The merges rebuilt from a SentencePiece vocabulary's scores with one long token of n characters: the
   bounded rebuild (split points at token lengths only) beside the plain one it replaced (every split).
   The plain one is run up to 100,000 characters (it is quadratic); the bounded one up to 1,000,000. And
   both on Gemma 3's real 262,144-token vocabulary (when installed): the same merges, the same time.
3. Every hostile chat template of the corpus, and the good one: wall seconds to the answer (a prompt or
   one message), and the caller's heap peak (the work is in the isolated child, capped at 256 MB); the
   good template also rendered in the caller's interpreter (the way it was before), for what isolation costs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import torch  # noqa: E402
from shared import ROOT  # noqa: F401  (puts the repository on sys.path)

from tests.gguf_corpus import CHAT_TEMPLATES, corpus, plain_merges  # noqa: E402
from tests.gguf_files import CHAT_TEMPLATE, sentencepiece_vocab  # noqa: E402
from transformer.hf.chat import render_chat  # noqa: E402
from transformer.hf.gguf_tokenizer import merges_from_scores  # noqa: E402
from transformer.loader import load_model  # noqa: E402

MESSAGES = [{"role": "user", "content": "What is the capital of Korea?"}]


def measured(work) -> dict:
    """Wall seconds, the Python heap's peak (MB) and the outcome (``ok`` or the refusal code) of ``work()``."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        work()
        outcome = "ok"
    except ValueError as err:
        outcome = getattr(err, "code", type(err).__name__)
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"seconds": seconds, "peak_mb": peak / 1024**2, "outcome": outcome}


def median_of(rows: list[dict]) -> dict:
    return {
        "seconds": round(statistics.median(r["seconds"] for r in rows), 4),
        "peak_mb": round(statistics.median(r["peak_mb"] for r in rows), 2),
        "outcome": rows[0]["outcome"],
    }


def files_part(repeats: int, folder: Path) -> list[dict]:
    cases = corpus(folder)
    good = folder / "anchor.gguf"
    good.write_bytes(cases[0].data)
    out = []
    for case in cases[1:]:
        path = folder / f"{case.id}.gguf"
        path.write_bytes(case.data)
        anchor, hostile = [], []
        for _ in range(repeats):  # interleaved: the good file, then the crafted one
            anchor.append(measured(lambda: load_model(good)))
            hostile.append(measured(lambda p=path: load_model(p)))
        row = {"case": case.id, "bytes": len(case.data), **median_of(hostile), "anchor_good_file": median_of(anchor)}
        out.append(row)
        print(json.dumps(row), flush=True)
    return out


def merges_part(repeats: int) -> list[dict]:
    tokens, _, _, scores = sentencepiece_vocab()
    out = []
    for n in (1_000, 10_000, 50_000, 100_000, 1_000_000):
        long_tokens = tokens + ["▁" + "a" * (n - 1)]
        vocab = {t: i for i, t in enumerate(long_tokens)}
        table = dict(zip(long_tokens, scores + [-1.0]))
        bounded, plain = [], []
        for _ in range(repeats):
            bounded.append(measured(lambda v=vocab, s=table: merges_from_scores(v, s)))
            if n <= 100_000:
                plain.append(measured(lambda v=vocab, s=table: plain_merges(v, s)))
        row = {"token_chars": n, "bounded": median_of(bounded), "plain": median_of(plain) if plain else None}
        out.append(row)
        print(json.dumps(row), flush=True)
    return out


GEMMA = ROOT / "data" / "models" / "gemma-3-270m" / "gemma-3-270m-q4_k_m.gguf"  # installed by requirements.txt


def real_vocabulary_part(repeats: int) -> dict | None:
    """The rebuild on a real SentencePiece vocabulary without merges (Gemma 3's 262,144 tokens), bounded beside
    plain: CPU seconds (the machine is shared) and whether the merges are the same; None when not installed."""
    if not GEMMA.is_file():
        return None
    from transformer.hf.gguf_file import read_gguf

    meta = read_gguf(GEMMA).metadata
    tokens, scores = meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.scores"]
    vocab, table = {t: i for i, t in enumerate(tokens)}, dict(zip(tokens, scores))
    bounded, plain, same = [], [], True
    for _ in range(repeats):
        started = time.process_time()
        ours = merges_from_scores(vocab, table)
        bounded.append(time.process_time() - started)
        started = time.process_time()
        theirs = plain_merges(vocab, table)
        plain.append(time.process_time() - started)
        same = same and ours == theirs
    row = {"file": GEMMA.name, "tokens": len(tokens), "merges": len(ours), "same_merges": same,
           "bounded_cpu_s": round(statistics.median(bounded), 3), "plain_cpu_s": round(statistics.median(plain), 3)}  # fmt: skip
    print(json.dumps(row), flush=True)
    return row


def in_process(template: str) -> str:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template).render(messages=MESSAGES, add_generation_prompt=True)


def chat_part(repeats: int) -> list[dict]:
    out = []
    for template, code in [(CHAT_TEMPLATE, "ok"), *CHAT_TEMPLATES.items()]:
        rows, anchor = [], []
        for _ in range(repeats if code != "chat_time" else 1):
            rows.append(measured(lambda t=template: render_chat(t, MESSAGES)))
            if code == "ok":
                anchor.append(measured(lambda: in_process(CHAT_TEMPLATE)))
        row = {"template": template[:80], "expected": code, **median_of(rows)}
        if anchor:
            row["anchor_in_process"] = median_of(anchor)
        out.append(row)
        print(json.dumps(row, ensure_ascii=False), flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "gguf_hostile.json"))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        result = {
            "files": files_part(args.repeats, Path(folder)),
            "merges": merges_part(args.repeats),
            "merges_real_vocabulary": real_vocabulary_part(args.repeats),
            "chat_templates": chat_part(args.repeats),
            "python": sys.version.split()[0],
            "torch_threads": 1,
        }
    Path(args.out).write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
