"""What the benchmarks share: the repository on ``sys.path``, the model options, filler text.

Each benchmark runs as a script (``python bench/bench_x.py``), so this folder is on ``sys.path``
and ``import shared`` finds this file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from transformer import LoadedModel, load_model, resolve_device  # noqa: E402


def call_ms(fn, device: str = "cpu") -> float:
    """Milliseconds one call of ``fn`` takes: on the CPU this thread's CPU time (``time.thread_time``,
    so other jobs' load falls outside it); on CUDA the wall time from the call to the end of the GPU's
    work (``torch.cuda.synchronize`` before and after)."""
    if device != "cuda":
        start = time.thread_time()
        fn()
        return 1000 * (time.thread_time() - start)
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return 1000 * (time.perf_counter() - start)


FILLER_WORDS = slice(10, 600)  # frequent words, past the special tokens


def model_parser(description: str | None, repeats: int = 7) -> argparse.ArgumentParser:
    """--model, --device, --threads and --repeats, as every benchmark takes them."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--model", default="assets/models/imdb-sentiment")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=repeats)
    return p


def load(args: argparse.Namespace) -> LoadedModel:
    torch.set_num_threads(args.threads)
    return load_model(args.model, resolve_device(args.device))


def filler_words(loaded: LoadedModel) -> list[str]:
    return loaded.vocab.itos[FILLER_WORDS]


def filler_text(loaded: LoadedModel, tokens: int) -> str:
    """A text of exactly ``tokens`` known words (no ``<unk>``), for timing at a given length."""
    words = filler_words(loaded)
    return " ".join(words[i % len(words)] for i in range(tokens))


def save_report(report: dict, out: str | None) -> str:
    """``report`` as indented JSON, written to ``out`` when given (a long bench calls this after every run,
    so that one stopped early keeps what it measured); returns the text."""
    text = json.dumps(report, indent=2, ensure_ascii=False)
    if out:
        Path(out).write_text(text + "\n", encoding="utf-8")
    return text


def write_report(report: dict, out: str | None) -> None:
    """Print ``report`` as indented JSON and, with ``out``, write the same text there."""
    print(save_report(report, out))
