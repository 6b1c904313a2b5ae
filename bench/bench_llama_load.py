"""Load time and memory of a 135M-parameter Llama folder (SmolLM-135M's shape: hidden 576, 30 layers, 9 heads,
3 key/value heads, intermediate 1536, vocabulary 49,152, tied embeddings; random weights) read by our loader,
and ms per generated token with and without the key/value cache at 16, 64 and 256 tokens of context.

    python bench/bench_llama_load.py --out bench/results/llama_135m_load.json

The folder is written by transformers in this process; the measurements run in a fresh process that never
imports transformers, so its resident size is our loader's alone.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from shared import write_report

MB = 1_000_000
SHAPE = dict(
    hidden_size=576, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3, intermediate_size=1536,
    vocab_size=49152, tie_word_embeddings=True, max_position_embeddings=2048, rope_theta=10000.0,
)  # fmt: skip
CONTEXTS = (16, 64, 256)


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / MB


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB


def make_folder(folder: Path) -> int:
    """A random LlamaForCausalLM of SHAPE with a small byte-level tokenizer.json; returns its parameter count."""
    import transformers
    from tokenizers import ByteLevelBPETokenizer

    folder.mkdir(parents=True)
    tok = ByteLevelBPETokenizer()
    words = "the movie was great bad not good actor plot really a film story 영화 정말 재미 있다 없다".split()
    tok.train_from_iterator(words * 50, vocab_size=400, special_tokens=["<|endoftext|>"], show_progress=False)
    tok.save(str(folder / "tokenizer.json"))
    settings = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>"}
    (folder / "tokenizer_config.json").write_text(json.dumps(settings))
    config = transformers.LlamaConfig(**SHAPE, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    model.save_pretrained(folder)
    return sum(p.numel() for p in model.parameters())


def per_token_ms(model, context: int, use_cache: bool, steps: int) -> float:
    """Median ms for one new token after ``context`` tokens (cached: one step with the cache of the context)."""
    from transformer.lm.cache import forward_cached

    ids = torch.randint(5, 300, (1, context + steps), generator=torch.Generator().manual_seed(context))
    times = []
    with torch.no_grad():
        cache = forward_cached(model, ids[:, :context]).cache if use_cache else None
        for step in range(steps):
            end = context + step
            start = time.perf_counter()
            if use_cache:
                forward_cached(model, ids[:, end : end + 1], cache)
            else:
                model(ids[:, : end + 1])
            times.append((time.perf_counter() - start) * 1000)
    return round(sorted(times)[len(times) // 2], 1)


def measure(folder: Path, steps: int) -> dict:
    """In a fresh process: load the folder, then time generation steps."""
    from transformer.loader import load_model

    report = {"rss_before_loading_mb": round(rss_mb(), 1)}
    start = time.perf_counter()
    loaded = load_model(folder, "cpu")
    report["load_seconds"] = round(time.perf_counter() - start, 2)
    report["rss_after_loading_mb"] = round(rss_mb(), 1)
    report["loading_added_mb"] = round(report["rss_after_loading_mb"] - report["rss_before_loading_mb"], 1)
    report["peak_rss_while_loading_mb"] = round(peak_mb(), 1)
    report["parameters_ours"] = sum(p.numel() for p in loaded.model.parameters())
    report["ms_per_token"] = {
        str(context): {
            "cached": per_token_ms(loaded.model, context, True, steps),
            "uncached": per_token_ms(loaded.model, context, False, steps),
        }
        for context in CONTEXTS
    }
    return report


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None)
    p.add_argument("--steps", type=int, default=9, help="tokens timed per context (the median is reported)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--measure", default=None, help=argparse.SUPPRESS)  # the fresh process's own run
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    if args.measure:
        print(json.dumps(measure(Path(args.measure), args.steps)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "llama-135m"
        parameters = make_folder(folder)
        run = [sys.executable, __file__, "--measure", str(folder), "--steps", str(args.steps)]
        run += ["--threads", str(args.threads)]
        lines = subprocess.run(run, check=True, capture_output=True, text=True).stdout.splitlines()
        report = {"model": "LlamaForCausalLM, SmolLM-135M shape, random weights", "shape": SHAPE}
        report.update(json.loads(lines[-1]))
        report["parameters_transformers"] = parameters
        report["weights_file_mb"] = round((folder / "model.safetensors").stat().st_size / MB, 1)
        report["device"] = f"cpu, {args.threads} thread(s), torch {torch.__version__}"
    write_report(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
