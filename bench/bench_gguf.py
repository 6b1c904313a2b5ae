"""A bundled 4-bit GGUF model (SmolLM2-135M-Instruct, or Gemma 3 270M with ``--model gemma3``): our loader
against transformers' GGUF loader (eager, float32), one CPU thread, interleaved.

    python bench/bench_gguf.py --out bench/results/gguf_smollm2.json [--rounds 3] [--repeats 5]
    python bench/bench_gguf.py --model gemma3 --out bench/results/gguf_gemma3.json

Gemma 3's file is the one joined from its packages in the data folder (``transformer/hf/gguf_package.py``,
joined before the first timed load); ours loads the model folder, transformers the joined file.

1. Load time (header, dequantisation, building the model) and memory: each load in a fresh process
   (``--child ours`` / ``--child theirs``, ours and theirs alternating), which loads the file twice: the
   first load pays what a process pays once (torch importing ``torch._dynamo`` on its first meta-device
   operation, ~5 s here, for any importer that builds on the meta device), the second shows the loader
   alone. Memory: resident size after the first load minus before it (after the imports), the peak during
   it, and what the second copy adds (the model alone, without what the first load imported).
2. ms per generated token at 16, 64 and 256 tokens of context, in one process with both models: the
   single-token steps with the key/value cache that each ``generate`` runs (ours ``forward_cached``,
   transformers' forward with ``past_key_values``), the context's pass untimed; and the whole greedy
   ``generate()`` of 1 + S tokens on both (ours ``transformer.lm.decode.generate`` also keeps each step's
   probabilities and attention rows for the Generate page). Ours and theirs alternate within every repeat.
3. One 128-token analysis with every head's weights: our ``analyze`` (the one call every page reads:
   attention, scores, residual stream, logits) and our bare forward with weights, against transformers'
   eager forward with ``output_attentions=True``; alternating.

Times are CPU seconds of the benchmark's process (``time.process_time``, torch on one thread), so other
jobs on the shared machine (load average 8-17 while this ran on 2 cores) fall outside them; the loads'
wall-clock times are reported beside. (The time of the calling thread alone, ``time.thread_time``, missed
part of transformers' ``generate()``: it gave negative per-token times.) Medians with (min, max) over the
repeats.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
from shared import ROOT, save_report

MODELS = {  # --model: (our folder, the folder transformers reads, the file, vocabulary, pad id)
    "smollm2": ("smollm2-135m-instruct", None, "SmolLM2-135M-Instruct.Q4_1.gguf", 49152, 2),
    "gemma3": ("gemma-3-270m", "gemma-3-270m", "gemma-3-270m-q4_k_m.gguf", 262144, 0),
}
MODEL = MODELS["smollm2"]
NAME = ["smollm2"]  # the --model chosen (the children are told it)
CONTEXTS = (16, 64, 256)
MB = 1_000_000


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / MB


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB


def our_folder() -> Path:
    return ROOT / "assets" / "models" / MODEL[0]


def their_folder() -> Path:
    """Where transformers reads the file: the bundled folder, or the data folder a packaged file is joined into."""
    if MODEL[1] is None:
        return our_folder()
    from transformer.hf.gguf_package import packaged_file

    return packaged_file(our_folder()).parent


def load_ours():
    from transformer.loader import load_model

    return load_model(our_folder() if MODEL[1] else our_folder() / MODEL[2])


def load_theirs():
    import transformers

    options = dict(gguf_file=MODEL[2], attn_implementation="eager", dtype=torch.float32)
    return transformers.AutoModelForCausalLM.from_pretrained(their_folder(), **options).eval()


def weights_count(model) -> int:
    """Parameters, and the values of a token table kept packed (buffers, one int8 each)."""
    packed = sum(b.numel() for name, b in model.named_buffers() if name.endswith("tokens.values"))
    return sum(p.numel() for p in model.parameters()) + packed


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
    out["parameters"] = weights_count(model.model if which == "ours" else model)
    print(json.dumps(out))


def loads(rounds: int, sides: tuple[str, ...] = ("ours", "theirs")) -> dict:
    runs: dict[str, list[dict]] = {which: [] for which in sides}
    for _ in range(rounds):
        for which in sides:
            command = [sys.executable, __file__, "--child", which, "--model", NAME[0]]
            done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
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
    return torch.randint(17, MODEL[3], (tokens,), generator=gen).tolist()


@torch.no_grad()
def per_token(ours, theirs, repeats: int, steps: int) -> dict:
    """Per context: the mean CPU ms of ``steps`` single-token steps after the context, each with its cache
    (ours: ``forward_cached``, what our ``generate`` runs per token; transformers: the forward with
    ``past_key_values`` that its ``generate()`` runs per token), the context's pass untimed; and the whole
    ``generate()`` of 1 + ``steps`` tokens on both (the context's pass and our per-step records included)."""
    from transformer.lm.cache import forward_cached
    from transformer.lm.decode import generate
    from transformer.lm.sampling import Sampling

    def our_steps(prompt, new):
        cache = forward_cached(ours.model, prompt).cache
        start = time.process_time()
        for i in range(new.shape[1]):
            forward_cached(ours.model, new[:, i : i + 1], cache)
        return time.process_time() - start

    def their_steps(prompt, new):
        cache = theirs(prompt, use_cache=True).past_key_values
        start = time.process_time()
        for i in range(new.shape[1]):
            cache = theirs(new[:, i : i + 1], past_key_values=cache, use_cache=True).past_key_values
        return time.process_time() - start

    def our_generate(prompt):
        start = time.process_time()
        generate(ours.model, prompt[0].tolist(), 1 + steps, Sampling(greedy=True))
        return time.process_time() - start

    def their_generate(prompt):
        options = dict(do_sample=False, max_new_tokens=1 + steps, min_new_tokens=1 + steps, pad_token_id=MODEL[4])
        start = time.process_time()
        theirs.generate(prompt, attention_mask=torch.ones_like(prompt), **options)
        return time.process_time() - start

    out = {}
    for context in CONTEXTS:
        ids = torch.tensor([context_ids(context + steps)])
        prompt, new = ids[:, :context], ids[:, context:]
        our_steps(prompt, new[:, :1]), their_steps(prompt, new[:, :1])  # warm-up
        runs: dict[str, list[float]] = {
            "ours_ms": [],
            "transformers_ms": [],
            "ours_generate_s": [],
            "transformers_generate_s": [],
        }
        for _ in range(repeats):
            runs["ours_ms"].append(round(1000 * our_steps(prompt, new) / steps, 1))
            runs["transformers_ms"].append(round(1000 * their_steps(prompt, new) / steps, 1))
            runs["ours_generate_s"].append(round(our_generate(prompt), 2))
            runs["transformers_generate_s"].append(round(their_generate(prompt), 2))
        row = {name: spread(values) for name, values in runs.items()}
        row["ratio"] = round(row["ours_ms"]["median"] / row["transformers_ms"]["median"], 2)
        row["ratio_generate"] = round(row["ours_generate_s"]["median"] / row["transformers_generate_s"]["median"], 2)
        out[str(context)] = row
        print(context, row["ours_ms"]["median"], row["transformers_ms"]["median"], row["ratio_generate"], flush=True)
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
            start = time.process_time()
            call()
            timings[name].append(round(1000 * (time.process_time() - start), 1))
    out = {name: spread(values) for name, values in timings.items()}
    out["tokens"] = tokens
    out["ratio_analyze"] = round(out["analyze"]["median"] / out["transformers_eager"]["median"], 2)
    out["ratio_forward"] = round(out["forward_with_weights"]["median"] / out["transformers_eager"]["median"], 2)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--child", choices=["ours", "theirs"])
    p.add_argument("--model", choices=sorted(MODELS), default="smollm2")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--out")
    p.add_argument("--keep-load", action="store_true", help="reuse the load section already in --out")
    p.add_argument("--our-load-only", action="store_true", help="time only our loads (transformers' takes minutes)")
    args = p.parse_args()
    global MODEL
    MODEL, NAME[0] = MODELS[args.model], args.model
    if args.child:
        child(args.child)
        return
    torch.set_num_threads(1)
    if MODEL[1] is not None:
        their_folder()  # a packaged file joined now, not inside a timed load
    report = {"file": MODEL[2], "threads": 1, "torch": torch.__version__, "method": __doc__.split("\n\n", 2)[2].strip()}
    kept = json.loads(Path(args.out).read_text()) if args.keep_load and args.out else {}
    sides = ("ours",) if args.our_load_only else ("ours", "theirs")
    report["load"] = kept["load"] if "load" in kept else loads(args.rounds, sides)
    save_report(report, args.out)
    print(json.dumps(report["load"]), flush=True)
    ours, theirs = load_ours(), load_theirs()
    report["per_token"] = per_token(ours, theirs, args.repeats, args.steps)
    save_report(report, args.out)
    report["analysis_128"] = analysis(ours, theirs, args.repeats)
    print(save_report(report, args.out))


if __name__ == "__main__":
    main()
