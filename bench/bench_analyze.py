"""Time one ``analyze`` call (every layer's per-head weights) for inputs of several lengths, and
measure its peak memory against the arrays it returns.

Run: python bench/bench_analyze.py [--model assets/models/imdb-sentiment] [--device cpu] [--repeats 7]
     python bench/bench_analyze.py --memory [--memory-lengths 512 1024 2048 4096] [--out FILE]
     python bench/bench_analyze.py --figures [--out FILE]

Timing: the median wall and CPU time (``time.thread_time``) per length. Memory: each length runs in a fresh child process, which
warms up on a 16-token input, resets its peak resident size (``/proc/self/clear_refs``), runs one
analysis and reports the peak's growth over the resident size before the call, next to the bytes
of every array the result holds (``returned``); ``ratio`` = peak growth / returned. Lengths past
the model's ``max_len`` run on a copy of it with a longer sinusoid table (same weights). Linux only.

Figures: at 128 tokens, in interleaved rounds, the CPU time of one analysis against the Attention page's default figures
as the page makes them (the 64-token window of the heatmap, the layer × head grid, the line view of
64 tokens with the 3 strongest keys per query), each built and then turned into what Streamlit
sends (``to_dict`` and ``plotly.io.to_json``, as ``st.plotly_chart`` does); and the head grid of a
BERT-sized model (12 layers × 12 heads, random softmax weights) at 128 and 512 tokens.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
from shared import filler_text, load, model_parser

from transformer import analyze
from transformer.bundle import LoadedModel
from transformer.core.model import build_model

WINDOW = 64  # the Attention page's token window (pages/attention.py WINDOW, LINES_WINDOW)


def result_bytes(result) -> int:
    """Bytes of every numpy array the result holds (whatever its fields are called)."""
    return sum(v.nbytes for f in dataclasses.fields(result) if isinstance(v := getattr(result, f.name), np.ndarray))


def timing(loaded: LoadedModel, repeats: int) -> None:
    for length in (16, 128, 512, 1024):
        text = filler_text(loaded, length)
        analyze(loaded, [text], max_len=length)  # warm-up
        wall, cpu = [], []
        for _ in range(repeats):
            start, start_cpu = time.perf_counter(), time.thread_time()
            result = analyze(loaded, [text], max_len=length)
            wall.append(time.perf_counter() - start)
            cpu.append(time.thread_time() - start_cpu)
        print(
            f"{length:4d} tokens: median {1000 * statistics.median(wall):7.1f} ms wall, "
            f"{1000 * statistics.median(cpu):7.1f} ms CPU; arrays returned {result_bytes(result) / 1e6:.1f} MB"
        )


def status_kb(key: str) -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key))


def longer(loaded: LoadedModel, length: int) -> LoadedModel:
    """``loaded`` itself, or a copy with room for ``length`` tokens (same weights, longer sinusoids)."""
    if length <= loaded.config.max_len:
        return loaded
    config = loaded.config.replace(max_len=length, default_max_tokens=length)
    model = build_model(config).eval()
    model.load_state_dict(loaded.model.state_dict())
    return dataclasses.replace(loaded, model=model, config=config)


def child_memory(loaded: LoadedModel, length: int) -> dict:
    """One analysis of ``length`` tokens in this process: peak resident growth vs bytes returned."""
    loaded = longer(loaded, length)
    analyze(loaded, [filler_text(loaded, 16)], max_len=16)  # warm-up: imports, allocator, kernels
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")  # the peak resident size starts again from the current one
    before = status_kb("VmRSS")
    start = time.perf_counter()
    result = analyze(loaded, [filler_text(loaded, length)], max_len=length)
    seconds = time.perf_counter() - start
    peak = status_kb("VmHWM") - before
    returned = result_bytes(result) / 1024
    return {
        "tokens": length,
        "returned_mb": round(returned / 1024, 1),
        "peak_growth_mb": round(peak / 1024, 1),
        "ratio": round(peak / returned, 2),
        "seconds": round(seconds, 3),
    }


def memory(args) -> list[dict]:
    rows = []
    for length in args.memory_lengths:
        cmd = [sys.executable, __file__, "--model", args.model, "--device", args.device, "--child", str(length)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        row = json.loads(out.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"{row['tokens']:5d} tokens: returned {row['returned_mb']:8.1f} MB, peak growth "
            f"{row['peak_growth_mb']:8.1f} MB, ratio {row['ratio']:.2f} ({row['seconds']:.2f} s)"
        )
    return rows


def cpu_ms(fn, repeats: int) -> float:
    """Median CPU milliseconds of ``fn()`` over ``repeats`` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.thread_time()
        fn()
        times.append(1000 * (time.thread_time() - start))
    return statistics.median(times)


def sent(build) -> int:
    """Build a figure and turn it into what Streamlit sends; returns the JSON's length."""
    import plotly.io as pio  # here, not at the top: the timing alone runs where plotly is not installed (a GPU host)

    return len(pio.to_json(build().to_dict(), validate=False))


def page_figures(attn: np.ndarray, tokens: list[str]) -> dict:
    """The Attention page's default figures as the page makes them: {name: build function}."""
    from ui.figures import attention as figs

    head = attn[0, 0]
    return {
        "heatmap": lambda: figs.attention_heatmap(head[:WINDOW, :WINDOW], tokens[:WINDOW], title="L1 H1"),
        "grid": lambda: figs.head_grid(attn),
        "lines": lambda: figs.attention_lines(head[:WINDOW, :WINDOW], tokens[:WINDOW], top_k=3, title="L1 H1"),
    }


def spread(values: list[float]) -> list[float]:
    """The 10th and 90th percentile of ``values``."""
    return [round(float(v), 2) for v in np.percentile(values, [10, 90])]


def figures(loaded: LoadedModel, repeats: int) -> dict:
    """Interleaved rounds: each round times one analysis and each figure built and sent (CPU time),
    so a load that comes and goes falls on all of them alike; medians, and the 10th-90th percentile
    of the per-round ratio of the page's figures to the analysis."""
    from ui.figures import attention as figs

    text = filler_text(loaded, 128)
    result = analyze(loaded, [text], max_len=128)
    page = page_figures(result.attention_for(0), result.tokens[0])
    contestants = {"analysis": lambda: analyze(loaded, [text], max_len=128)}
    contestants |= {f"{name}_build": build for name, build in page.items()}
    contestants |= {f"{name}_sent": (lambda build=build: sent(build)) for name, build in page.items()}
    times = {name: [] for name in contestants}
    for fn in contestants.values():
        fn()  # warm-up
    for _ in range(max(repeats, 5) * 3):
        for name, fn in contestants.items():
            start = time.thread_time()
            fn()
            times[name].append(1000 * (time.thread_time() - start))
    median = {name: statistics.median(values) for name, values in times.items()}
    rounds = len(times["analysis"])
    per_round = [sum(times[f"{n}_sent"][i] for n in page) / times["analysis"][i] for i in range(rounds)]
    out = {
        "rounds": rounds,
        "analysis_ms": round(median["analysis"], 2),
        "analysis_spread_ms": spread(times["analysis"]),
    }
    for name, build in page.items():
        out[name] = {
            "build_ms": round(median[f"{name}_build"], 2),
            "build_and_send_ms": round(median[f"{name}_sent"], 2),
            "build_and_send_spread_ms": spread(times[f"{name}_sent"]),
            "json_kb": round(sent(build) / 1024, 1),
        }
    out["page_total_ms"] = round(sum(out[name]["build_and_send_ms"] for name in page), 2)
    out["page_over_analysis"] = round(statistics.median(per_round), 2)
    out["page_over_analysis_spread"] = spread(per_round)
    rng = np.random.default_rng(0)
    for length in (128, 512):
        scores = rng.normal(size=(12, 12, length, length)).astype(np.float32)
        bert = np.exp(scores - scores.max(-1, keepdims=True))
        bert /= bert.sum(-1, keepdims=True)
        out[f"bert_grid_{length}"] = {
            "build_ms": round(cpu_ms(lambda bert=bert: figs.head_grid(bert), max(1, repeats // 3)), 1),
            "build_and_send_ms": round(cpu_ms(lambda bert=bert: sent(lambda: figs.head_grid(bert)), 3), 1),
            "json_kb": round(sent(lambda bert=bert: figs.head_grid(bert)) / 1024, 1),
        }
    print(json.dumps(out, indent=1))
    return out


def main() -> None:
    p = model_parser(__doc__)
    p.add_argument("--memory", action="store_true", help="peak memory per length, each in a child process")
    p.add_argument("--memory-lengths", type=int, nargs="+", default=[512, 1024, 2048, 4096])
    p.add_argument("--figures", action="store_true", help="the Attention page's figures against one analysis")
    p.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", default=None, help="write the memory rows as JSON here")
    args = p.parse_args()
    loaded = load(args)
    if args.child is not None:
        print(json.dumps(child_memory(loaded, args.child)))
        return
    print(f"model {args.model} on {args.device}, {torch.get_num_threads()} thread(s)")
    if args.figures:
        out = figures(loaded, args.repeats)
        if args.out:
            with open(args.out, "w", encoding="utf-8") as f:
                json.dump({"model": args.model, "torch": torch.__version__, **out}, f, indent=1)
        return
    if not args.memory:
        timing(loaded, args.repeats)
        return
    rows = memory(args)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"model": args.model, "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
