"""The decoding scheduler on SmolLM2 in one process (issue 55), beside the fairest anchors, interleaved:

1. one generation alone: ``generate()`` (today's path, in the caller's thread) against the same generation
   through the scheduler alone (``BatchingScheduler.generate``: its worker thread), seconds per token of the
   process's CPU and of wall time, alternated ``--repeats`` times (the cost of the scheduler for a session alone);
2. one batched step of N generations (``batch_step``) against N steps alone (``forward_cached``), CPU
   seconds of this thread, alternated, for N = 1, 4, 8, 16, 20 after prompts of 12 .. 12 + N tokens;
3. the memory of Generate's step records at the longest prompt the page accepts (4,000 characters of an
   English paragraph), 20 steps: bytes kept per step against the two float64 distributions over the
   vocabulary a step kept before (2 x V x 8 bytes); the attention rows are capped at ROWS_BUDGET whatever
   the prompt.

    python bench/bench_batched_decoding.py --out bench/results/batched_decoding.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import torch
from shared import ROOT, save_report  # noqa: F401  (puts the repository on sys.path)

from transformer.hf.gguf_import import load_gguf_folder  # noqa: E402
from transformer.lm.cache import forward_cached  # noqa: E402
from transformer.lm.decode import Decoding, generate, step_alone  # noqa: E402
from transformer.serving import BatchingScheduler  # noqa: E402
from transformer.serving.batch_cache import BatchCache  # noqa: E402
from transformer.serving.batch_step import batch_step  # noqa: E402

FOLDER = ROOT / "assets" / "models" / "smollm2-135m-instruct"
ENGLISH = "The museum opens at nine, and the class walks there together after the first lesson. " * 60


def alone_vs_scheduler(model, repeats: int) -> dict:
    """Seconds per token of the process's CPU (every thread: the scheduler's worker too) and of wall time."""
    prompt, steps = list(range(100, 112)), 20
    runs = {"generate": ([], []), "scheduler": ([], [])}
    scheduler = BatchingScheduler()
    for _ in range(repeats):
        for name, run in (("generate", lambda: generate(model, prompt, steps)),
                          ("scheduler", lambda: scheduler.generate(Decoding(model, prompt, steps)))):  # fmt: skip
            cpu, wall = time.process_time(), time.perf_counter()
            run()
            runs[name][0].append((time.process_time() - cpu) / steps)
            runs[name][1].append((time.perf_counter() - wall) / steps)
    cpu = {name: statistics.median(v[0]) for name, v in runs.items()}
    wall = {name: statistics.median(v[1]) for name, v in runs.items()}
    return {"cpu_s_per_token": {k: round(v, 4) for k, v in cpu.items()},
            "wall_s_per_token": {k: round(v, 4) for k, v in wall.items()},
            "cpu_ratio": round(cpu["scheduler"] / cpu["generate"], 3),
            "wall_ratio": round(wall["scheduler"] / wall["generate"], 3), "repeats": repeats}  # fmt: skip


def step_costs(model, sizes: list[int], repeats: int) -> list[dict]:
    rows = []
    for n in sizes:
        decodings = [Decoding(model, list(range(100, 112 + i)), 1000) for i in range(n)]
        for d in decodings:
            step_alone(d)
        batched, alone = [], []
        for _ in range(repeats):
            batch = BatchCache([d.cache for d in decodings])
            start = time.thread_time()
            batch_step(model, [d.pending[0] for d in decodings], batch, [None] * n)
            batched.append(time.thread_time() - start)
            start = time.thread_time()
            for d in decodings:
                forward_cached(model, torch.tensor([d.pending]), d.cache, True)
            alone.append(time.thread_time() - start)
        b, a = statistics.median(batched), statistics.median(alone)
        rows.append({"generations": n, "batched_step_s": round(b, 4), "alone_steps_s": round(a, 4),
                     "speedup": round(a / b, 2), "tokens_per_s_batched": round(n / b, 1)})  # fmt: skip
        print(rows[-1])
    return rows


def record_memory(loaded) -> list[dict]:
    model, tok = loaded.model, loaded.lm_tokenizer
    vocab = model.config.vocab_size
    out = []
    for name, text in (("english 4,000 characters", ENGLISH[:4000]),):
        ids = tok.encode(text).ids[: model.config.max_len - 20]
        gen = generate(model, ids, 20)
        kept = [s.nbytes for s in gen.steps]
        out.append({"prompt": name, "tokens": len(ids), "steps": len(gen.steps),
                    "rows_kept_steps": sum(s.attention is not None for s in gen.steps),
                    "bytes_per_step_max": max(kept), "bytes_all_steps": sum(kept),
                    "before_bytes_per_step": 2 * vocab * 8 + max(kept), "vocab": vocab})  # fmt: skip
        print(out[-1])
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--sizes", default="1,4,8,16,20")
    p.add_argument("--out", default="bench/results/batched_decoding.json")
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.set_grad_enabled(False)
    loaded = load_gguf_folder(FOLDER, "cpu")
    model = loaded.model
    report = {"model": FOLDER.name, "threads": 1, "cpus": os.cpu_count(), "load_before": list(os.getloadavg())}
    report["alone"] = alone_vs_scheduler(model, args.repeats)
    print(report["alone"])
    report["steps"] = step_costs(model, [int(n) for n in args.sizes.split(",")], args.repeats)
    report["records"] = record_memory(loaded)
    report["load_after"] = list(os.getloadavg())
    report["method"] = __doc__.split("\n\n")[0]
    print(save_report(report, args.out))


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    main()
