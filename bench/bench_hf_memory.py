"""Memory of an imported bert-base-sized model (12 layers, 12 heads, d 768, random weights): resident size
after loading it, one 512-token analysis against the app's per-request budget, and ten sessions'
analyses sharing the one loaded model through the app's cached service (as a server model named in
``$ATTENTION_LAB_MODELS`` is shared; an upload would be one copy per session).

    python bench/bench_hf_memory.py --out bench/results/hf_bert_base_memory.json
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from bench_hf import make_folder
from shared import write_report

from transformer.core.inputs import encode_inputs, weights_nbytes
from transformer.hf.importer import load_hf_folder

MB = 1_000_000


def rss_mb() -> float:
    """This process's resident size now (MB), from /proc."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / MB


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB


def text_of(tokens: int) -> str:
    """A text that the random model's word vocabulary reads as ``tokens`` pieces ([CLS], [SEP] included)."""
    return " ".join(f"w{i % 900}" for i in range(tokens - 2))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None)
    p.add_argument("--sessions", type=int, default=10)
    p.add_argument("--measure", default=None, help=argparse.SUPPRESS)  # the fresh process's own run
    args = p.parse_args()
    torch.set_num_threads(1)
    if args.measure:
        print(json.dumps(measure(Path(args.measure), args.sessions)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "bert-base"
        make_folder(folder)  # transformers' copy lives in this process only: the measurement runs in a fresh one
        run = [sys.executable, __file__, "--measure", str(folder), "--sessions", str(args.sessions)]
        report = json.loads(subprocess.run(run, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
        report["weights_file_mb"] = round((folder / "model.safetensors").stat().st_size / MB, 1)
    write_report(report, args.out)
    return 0


def measure(folder: Path, sessions: int) -> dict:
    """In a fresh process: load the folder, one 512-token analysis, then ``sessions`` 128-token ones kept in
    a store sized as the server's shared one."""
    from ui.compute import CACHE_BYTES, ByteBudgetCache  # the server's shared store, as the app sizes it
    from ui.models import REQUEST_BYTES

    report = {"model": "BertForSequenceClassification, bert-base sizes, random weights"}
    start = rss_mb()
    report["rss_before_loading_mb"] = round(start, 1)
    loaded = load_hf_folder(folder)
    report["rss_after_loading_mb"] = round(rss_mb(), 1)
    report["loading_added_mb"] = round(rss_mb() - start, 1)
    long_input = encode_inputs(loaded, [text_of(512)], 512)
    need = weights_nbytes(loaded.config, long_input)
    before = rss_mb()
    result = compute_analysis(loaded, [text_of(512)], 512)
    kept = result.attention.nbytes + result.queries.nbytes + result.keys.nbytes
    report["512_tokens"] = {
        "estimated_mb": round(need / MB, 1),
        "arrays_kept_mb": round(kept / MB, 1),
        "request_budget_mb": round(REQUEST_BYTES / MB),
        "within_budget": need <= REQUEST_BYTES,
        "rss_growth_mb": round(rss_mb() - before, 1),
        "peak_rss_mb": round(peak_mb(), 1),
    }
    del result
    store, sizes = ByteBudgetCache(CACHE_BYTES), []
    for s in range(sessions):  # each session's own 128-token text, kept in the one shared store
        text = " ".join(f"w{(i * 7 + s * 13) % 900}" for i in range(126))
        size = weights_nbytes(loaded.config, encode_inputs(loaded, [text], 128))
        store.put(("bert-base", "analysis", text), compute_analysis(loaded, [text], 128), size)
        sizes.append(size)
    report["sessions_128_tokens"] = {
        "sessions": sessions,
        "per_analysis_mb": round(sizes[0] / MB, 1),
        "shared_store_mb": round(store.nbytes / MB, 1),
        "shared_store_limit_mb": round(CACHE_BYTES / MB),
        "kept": len(list(store)),
        "rss_mb": round(rss_mb(), 1),
    }
    report["peak_rss_mb"] = round(peak_mb(), 1)
    return report


def compute_analysis(loaded, texts: list[str], max_len: int):
    from transformer.analysis.analyze import analyze_encoded

    return analyze_encoded(loaded, encode_inputs(loaded, texts, max_len))


if __name__ == "__main__":
    sys.exit(main())
