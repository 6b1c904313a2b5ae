"""SmolLM2-135M-Instruct from its 4-bit GGUF file: our loader against transformers' GGUF loader (eager,
float32), one CPU thread, interleaved.

    python bench/bench_gguf.py --out bench/results/gguf_smollm2.json [--rounds 3] [--repeats 5]

1. Load time (header, dequantisation, building the model) and memory: each load in a fresh process
   (``--child ours`` / ``--child theirs``, ours and theirs alternating), which loads the file twice: the
   first load pays what a process pays once (torch importing ``torch._dynamo`` on its first meta-device
   operation, ~5 s here, for any importer that builds on the meta device), the second shows the loader
   alone. Memory: resident size after the first load minus before it (after the imports), the peak during
   it, and what the second copy adds (the model alone, without what the first load imported).
2. ms per generated token at 16, 64 and 256 tokens of context, greedy, in one process with both models:
   ours ``transformer.lm.decode.generate`` (key/value cache) and transformers ``generate()`` (its cache),
   each as (time for 1 + S new tokens - time for 1 new token) / S, so the prompt's pass cancels out; the
   two alternate within every repeat.
3. One 128-token analysis with every head's weights: our ``analyze`` (the one call every page reads:
   attention, scores, residual stream, logits) and our bare forward with weights, against transformers'
   eager forward with ``output_attentions=True``; alternating.

Times are CPU seconds of the measuring thread (``time.thread_time``; loads: ``time.process_time`` of the
one-thread process), so other jobs on the shared machine (load average 8-14 while this ran on 2 cores) fall
outside them; the loads' wall-clock times are reported beside. Medians with (min, max) over the repeats.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

import torch
from shared import ROOT, save_report

FOLDER = ROOT / "assets" / "models" / "smollm2-135m-instruct"
FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONTEXTS = (16, 64, 256)
MB = 1_000_000


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / MB


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB


def load_ours():
    from transformer.loader import load_model

    return load_model(FOLDER / FILE)


def load_theirs():
    import transformers

    options = dict(gguf_file=FILE, attn_implementation="eager", dtype=torch.float32)
    return transformers.AutoModelForCausalLM.from_pretrained(FOLDER, **options).eval()


def child(which: str) -> None:
    """One fresh process: load twice, print {first_s, second_s, added_mb, peak_added_mb}."""
    torch.set_num_threads(1)
    import transformer.loader  # noqa: F401 - imports are not the loader's time

    if which == "theirs":
        import transformers  # noqa: F401
        from transformers import AutoModelForCausalLM  # noqa: F401 - the lazy module resolved before timing
    load = load_ours if which == "ours" else load_theirs
    before, peak_before = rss_mb(), peak_mb()
    wall, cpu = time.perf_counter(), time.process_time()
    model = load()
    first, first_cpu = time.perf_counter() - wall, time.process_time() - cpu
    after, peak_after = rss_mb(), peak_mb()
    wall, cpu = time.perf_counter(), time.process_time()
    again = load()
    second, second_cpu = time.perf_counter() - wall, time.process_time() - cpu
    second_added = rss_mb() - after  # the second copy alone: no one-time imports in it
    del again
    out = {"first_cpu_s": round(first_cpu, 2), "second_cpu_s": round(second_cpu, 2)}
    out |= {"first_wall_s": round(first, 2), "second_wall_s": round(second, 2), "added_mb": round(after - before)}
    out["peak_added_mb"] = round(peak_after - peak_before)
    out["second_added_mb"] = round(second_added)
    out["parameters"] = sum(p.numel() for p in (model.model if which == "ours" else model).parameters())
    print(json.dumps(out))


def loads(rounds: int) -> dict:
    runs: dict[str, list[dict]] = {"ours": [], "theirs": []}
    for _ in range(rounds):
        for which in ("ours", "theirs"):
            done = subprocess.run(
                [sys.executable, __file__, "--child", which], capture_output=True, text=True, check=True, cwd=ROOT
            )
            runs[which].append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {which: summary_of(found) for which, found in runs.items()}


def summary_of(found: list[dict]) -> dict:
    keys = (
        "first_cpu_s",
        "second_cpu_s",
        "first_wall_s",
        "second_wall_s",
        "added_mb",
        "peak_added_mb",
        "second_added_mb",
    )
    out = {k: spread([r[k] for r in found]) for k in keys}
    out["parameters"] = found[0]["parameters"]
    return out


def spread(values: list[float]) -> dict:
    return {"median": round(statistics.median(values), 3), "min": min(values), "max": max(values), "runs": values}


def context_ids(tokens: int) -> list[int]:
    gen = torch.Generator().manual_seed(tokens)
    return torch.randint(17, 49152, (tokens,), generator=gen).tolist()


@torch.no_grad()
def per_token(ours, theirs, repeats: int, steps: int) -> dict:
    from transformer.lm.decode import generate
    from transformer.lm.sampling import Sampling

    def our_time(prompt, new):
        start = time.thread_time()
        generate(ours.model, prompt, new, Sampling(greedy=True))
        return time.thread_time() - start

    def their_time(prompt, new):
        ids = torch.tensor([prompt])
        mask = torch.ones_like(ids)
        start = time.thread_time()
        theirs.generate(
            ids, attention_mask=mask, do_sample=False, max_new_tokens=new, min_new_tokens=new, pad_token_id=2
        )
        return time.perf_counter() - start

    out = {}
    for context in CONTEXTS:
        prompt = context_ids(context)
        our_time(prompt, 2), their_time(prompt, 2)  # warm-up
        mine, theirs_ms = [], []
        for _ in range(repeats):
            mine.append(1000 * (our_time(prompt, 1 + steps) - our_time(prompt, 1)) / steps)
            theirs_ms.append(1000 * (their_time(prompt, 1 + steps) - their_time(prompt, 1)) / steps)
        ratio = statistics.median(mine) / statistics.median(theirs_ms)
        out[str(context)] = {
            "ours_ms": spread([round(v, 1) for v in mine]),
            "transformers_ms": spread([round(v, 1) for v in theirs_ms]),
            "ratio": round(ratio, 2),
        }
        print(
            context, out[str(context)]["ours_ms"]["median"], out[str(context)]["transformers_ms"]["median"], flush=True
        )
    return out


@torch.no_grad()
def analysis(ours, theirs, repeats: int) -> dict:
    from transformer.analysis.analyze import analyze

    ids = context_ids(128)
    text = ours.lm_tokenizer.decode(ids)
    tokens = len(ours.lm_tokenizer.encode(text).ids)
    batch = torch.tensor([ours.lm_tokenizer.encode(text).ids])
    timings = {"analyze": [], "forward_with_weights": [], "transformers_eager": []}
    calls = {
        "analyze": lambda: analyze(ours, [text], max_len=tokens),
        "forward_with_weights": lambda: ours.model(batch, need_weights=True),
        "transformers_eager": lambda: theirs(batch, output_attentions=True),
    }
    for call in calls.values():
        call()  # warm-up
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.thread_time()
            call()
            timings[name].append(round(1000 * (time.thread_time() - start), 1))
    out = {name: spread(values) for name, values in timings.items()}
    out["tokens"] = tokens
    out["ratio_analyze"] = round(out["analyze"]["median"] / out["transformers_eager"]["median"], 2)
    out["ratio_forward"] = round(out["forward_with_weights"]["median"] / out["transformers_eager"]["median"], 2)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--child", choices=["ours", "theirs"])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--out")
    args = p.parse_args()
    if args.child:
        child(args.child)
        return
    torch.set_num_threads(1)
    report = {"file": FILE, "threads": 1, "torch": torch.__version__, "method": __doc__.split("\n\n", 2)[2].strip()}
    report["load"] = loads(args.rounds)
    save_report(report, args.out)
    print(json.dumps(report["load"]), flush=True)
    ours, theirs = load_ours(), load_theirs()
    report["per_token"] = per_token(ours, theirs, args.repeats, args.steps)
    save_report(report, args.out)
    report["analysis_128"] = analysis(ours, theirs, args.repeats)
    print(save_report(report, args.out))


if __name__ == "__main__":
    main()
