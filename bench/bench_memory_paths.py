"""Peak resident memory one request adds to a process, per heavy path, at the longest text its box accepts,
on SmolLM2-135M (the bundled GGUF, 49,152-token vocabulary, 30 layers x 9 heads).

Run: python bench/bench_memory_paths.py [--paths lens,contributions,...] [--chars 3990]
Each path runs in a fresh child process: the model is loaded, the path run once on a 4-token input (so
lazy imports and first-call buffers are not counted), the kernel's high-water mark reset
(``/proc/self/clear_refs`` 5), then the path on the long input; the peak added is VmHWM minus the RSS
before. The long input is an English paragraph of ``--chars`` characters (the Residual page's boxes
accept 4,000). ``lens-full-128`` is the anchor: the lens as it was computed before (every reading's
whole distribution at once), at 128 tokens only (at the longest input it needs ~20 GB), beside
``lens-128``, the streamed lens on the same 128 tokens. Results: bench/results/memory_paths.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "assets" / "models" / "smollm2-135m-instruct"
OUT = ROOT / "bench" / "results" / "memory_paths.json"
SENTENCES = (
    "The acting was wonderful and the story kept me watching until the very last scene.",
    "Students in the back row asked why the model guessed Paris before the last layer had spoken.",
    "A small transformer reads every token, mixes them with attention, and writes a guess for the next one.",
    "On a rainy Tuesday the teacher opened the lens and showed how a word settles, layer by layer.",
    "Nobody expected the quiet film about a lighthouse keeper to become the surprise of the festival.",
)
PATHS = (
    "lens",
    "lens-128",
    "lens-full-128",
    "cli-lens",
    "contributions",
    "head-effects",
    "attention-row",
    "head-space",
    "generate",
    "attention-json",
)


def paragraph(chars: int) -> str:
    """English prose of exactly ``chars`` characters (the sentences in turn)."""
    text, i = "", 0
    while len(text) < chars:
        text += ("" if not text else " ") + SENTENCES[i % len(SENTENCES)]
        i += 1
    return text[:chars]


def status(field: str) -> int:
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def child(path: str, chars: int) -> dict:
    """Run ``path`` in this (fresh) process and measure it."""
    import torch

    torch.set_num_threads(1)
    from transformer.loader import load_model
    from transformer.residual import contributions, head_effects, logit_lens, trace
    from transformer.residual.contributions import ablation_limit
    from transformer.residual.head_space import layer_vectors, project
    from transformer.residual.lens import TOP
    from transformer.residual.readout import chain, readout
    from transformer.residual.records import lens_entries

    loaded = load_model(str(MODEL))
    model = loaded.model.eval()
    text = paragraph(chars)
    ids = torch.tensor([loaded.lm_tokenizer.encode(text).ids])
    if path.endswith("-128"):
        ids = ids[:, :128]
    last = ids.shape[1] - 1

    def full(x):
        streams = torch.stack(trace(model, x).streams)
        probs = torch.softmax(readout(chain(model), streams).float(), dim=-1)
        answer = probs[-1].argmax(-1)
        prob = probs.gather(-1, answer.expand(probs.shape[0], -1)[..., None])
        return probs.topk(TOP, dim=-1), (probs > prob).sum(-1)

    def head_space(x):
        lines = [line for line in text.split(". ") if line][:40]
        sentences = [loaded.lm_tokenizer.encode(line).ids[:64] for line in lines]
        q, k, w = layer_vectors(model, sentences, 0, lambda b: model(b, need_weights=True).attention, causal=True)
        return project(q, k, w)

    def generate_path(x):
        from transformer.lm.decode import generate

        return generate(model, x[0].tolist(), 64)

    def attention_json(x):
        from ui.downloads import analysis_json_bytes
        from ui.models import _analysed

        for max_len in (512, 448, 384, 320, 288, 256, 224, 192, 128):  # the longest the request budget accepts
            try:
                result = _analysed(loaded, [text], max_len)
            except ValueError:
                continue
            return len(analysis_json_bytes(loaded, result, 0)), max_len
        raise ValueError("no length fits the request budget")

    runs = {
        "lens": lambda x: logit_lens(model, x, top=TOP + 2),
        "lens-128": lambda x: logit_lens(model, x, top=TOP + 2),
        "lens-full-128": full,
        "cli-lens": lambda x: lens_entries(loaded, model, x, None, x.shape[1] - 1),
        "contributions": lambda x: contributions(model, x, x.shape[1] - 1),
        "head-effects": lambda x: head_effects(model, x[:, : ablation_limit(model)], ablation_limit(model) - 1, 11),
        "attention-row": lambda x: trace(model, x, weights=False, row=x.shape[1] - 1),
        "head-space": head_space,
        "generate": generate_path,
        "attention-json": attention_json,
    }
    run = runs[path]
    if path == "attention-json":
        text = paragraph(40)  # the first call on a short text
        run(ids[:, :4])
        text = paragraph(chars)
    else:
        run(ids[:, :4])  # first call: lazy imports and buffers
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    before = status("VmRSS")
    start = time.perf_counter()
    value = run(ids)
    seconds = time.perf_counter() - start
    extra = {"tokens": ablation_limit(model)} if path == "head-effects" else {}  # its cap: the ids it reads
    if path == "attention-json":  # the analysis at the longest length the request budget accepts, and its JSON
        extra = {"json_bytes": value[0], "max_len": value[1], "tokens": min(int(ids.shape[1]), value[1])}
    return {
        "path": path,
        "tokens": int(ids.shape[1]),
        "chars": chars if not path.endswith("-128") else None,
        "rss_before_mb": round(before / 1e6, 1),
        "peak_added_mb": round((status("VmHWM") - before) / 1e6, 1),
        "seconds": round(seconds, 2),
        "last_position": last,
    } | extra


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--paths", default=",".join(PATHS))
    parser.add_argument("--chars", type=int, default=3990)
    parser.add_argument("--child", default=None)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.chars)))
        return
    results = []
    for path in args.paths.split(","):
        cmd = [sys.executable, __file__, "--child", path, "--chars", str(args.chars)]
        done = subprocess.run(
            cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
        )
        if done.returncode != 0:
            results.append({"path": path, "error": done.stderr.strip().splitlines()[-1][:300]})
        else:
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(results[-1]), flush=True)
    if OUT.exists():  # keep the other paths' latest results
        ran = {r["path"] for r in results}
        results = [r for r in json.loads(OUT.read_text("utf-8"))["results"] if r["path"] not in ran] + results
    doc = {
        "model": "smollm2-135m-instruct (GGUF Q4_1, dequantised to float32), one CPU thread",
        "load_average": os.getloadavg(),
        "measure": "peak RSS added (kernel VmHWM after clear_refs 5, minus VmRSS before), fresh process per path",
        "results": results,
    }
    OUT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
