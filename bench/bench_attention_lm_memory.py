"""Memory of one Attention-page request on a language model (issue 60): SmolLM2 with the longest text the
box accepts (100,000 characters, cut to the page's token cap), as the page runs it (AppTest: analysis,
heatmap, grid, lines), then its JSON and NPZ downloads clicked; and the same on the text repeated
(sentence twice) and on the random-token probe. Anchor, side by side in the same interleaved run: the
model's own forward with every head's weights at the same number of tokens, stacked as the atlas and
Generate collect them (the path a page would take without the analysis' walk: tokens x vocabulary
logits, one copy of the weights per layer, then the stack).

Each case runs in a fresh process; the number is the peak resident memory while the request runs minus
the resident memory just before it (the model loaded and a short text run first), sampled every 2 ms.

Run: python bench/bench_attention_lm_memory.py [--rounds 2] [--out bench/results/attention_lm_memory.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = "smollm2-135m-instruct"
LONG = ("The cat sat on the mat because it was tired and the sun was warm. " * 1600)[:100_000]
CASES = ("page", "page_twice", "page_random", "forward")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Peak:
    """The largest resident size seen while the block runs, sampled every 2 ms by a thread."""

    def __enter__(self):
        self.before, self.peak, self.running = rss(), rss(), True
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()
        return self

    def _watch(self):
        while self.running:
            self.peak = max(self.peak, rss())
            time.sleep(0.002)

    def __exit__(self, *exc):
        self.running = False
        self.thread.join()
        self.peak = max(self.peak, rss())

    @property
    def added_mb(self) -> float:
        return (self.peak - self.before) / 2**20


def run_page(repeat: str | None) -> dict:
    import pytest

    from tests.app_helpers import open_app, record_downloads

    downloads = {}
    with pytest.MonkeyPatch.context() as patch:
        downloads = record_downloads(patch)
        query = {"repeat": repeat} if repeat else {}
        at = open_app("attention", model=MODEL, text="The cat sat.", timeout=600, **query)
        with Peak() as request:
            at.text_area(key="text").input(LONG).run(timeout=600)
        assert not at.exception, [e.value for e in at.exception]
        with Peak() as clicks:
            json_data, npz_bytes = downloads["json"](), len(downloads["npz"]())
    tokens = len(json.loads(json_data)["inputs"][0]["tokens"])
    return {"request_mb": request.added_mb, "downloads_mb": clicks.added_mb, "tokens": tokens,
            "json_bytes": len(json_data), "npz_bytes": npz_bytes}  # fmt: skip


def run_forward() -> dict:
    import numpy as np
    import torch

    from transformer.hf.gguf_import import load_gguf_folder
    from ui.decoder_attention import token_cap

    torch.set_num_threads(1)
    loaded = load_gguf_folder(ROOT / "assets" / "models" / MODEL, torch.device("cpu"))
    cap = token_cap(loaded.config)
    ids = torch.tensor([loaded.lm_tokenizer.encode(LONG).ids[:cap]])
    with torch.no_grad():
        loaded.model(ids[:, :4], need_weights=True)
        with Peak() as request:
            out = loaded.model(ids, need_weights=True)
            weights = np.stack([w.weights[0].float().numpy() for w in out.attention])
    return {"request_mb": request.added_mb, "tokens": int(weights.shape[-1])}


def child(case: str) -> None:
    import torch

    torch.set_num_threads(1)
    if case == "forward":
        result = run_forward()
    else:
        result = run_page({"page": None, "page_twice": "Sentence twice", "page_random": "Random tokens twice"}[case])
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "attention_lm_memory.json"))
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    runs = {case: [] for case in CASES}
    for _ in range(args.rounds):
        for case in CASES:  # interleaved: every case once per round, each in a fresh process
            env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
            out = subprocess.run([sys.executable, __file__, "--child", case], capture_output=True, text=True, env=env,
                                 cwd=ROOT, check=True)  # fmt: skip
            runs[case].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(case, runs[case][-1], flush=True)
    summary = {
        "what": "MB resident added by one Attention request on SmolLM2 (longest text the box accepts), fresh process each",
        "model": MODEL,
        "text_chars": len(LONG),
        "runs": runs,
        "max_request_mb": {case: round(max(r["request_mb"] for r in rs), 1) for case, rs in runs.items()},
    }
    Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary["max_request_mb"]))


if __name__ == "__main__":
    main()
