"""Memory of the Playground's many-long-lines request: N lines of ~1,000 tokens each.

before: what the page did until now, one ``analyze`` of all lines (one padded batch holding every
layer's and head's attention weights and scores, kept in the cache);
after: what it does now, ``predict_batch`` in length-sorted batches of at most 4 × 1,024² attention
cells, no attention kept, and at most ``ui.models.REQUEST_TOKENS`` tokens per request.

Each measurement runs in a fresh process: RSS after loading the model and a warm-up, the peak RSS
during the request (``ru_maxrss``), and the RSS while its result is still held.

Run: python bench/bench_playground_memory.py [--lines 16,32,64] [--tokens 1000] [--before-max 16]
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

from shared import filler_words, load, model_parser

MB = 1024 * 1024


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / MB


def texts(loaded, lines: int, tokens: int) -> list[str]:
    words = filler_words(loaded)
    return [" ".join(words[(i * 13 + j) % len(words)] for j in range(tokens)) for i in range(lines)]


def child(path: str, lines: int, tokens: int, args) -> dict:
    from transformer import analyze
    from transformer.text.predict import predict_batch
    from ui.models import REQUEST_TOKENS

    loaded = load(args)
    inputs = texts(loaded, lines, tokens)
    limit = loaded.config.default_max_tokens or loaded.config.max_len
    predict_batch(loaded, inputs[:1], limit)  # warm-up
    base = rss_mb()
    start = time.perf_counter()
    if path == "before":
        held = analyze(loaded, inputs, limit)
        ran = len(inputs)
    else:
        encoded = loaded.text_encoder().encode_batch(inputs, limit, loaded.config.add_cls_token)
        ran, used = 0, 0
        while ran < len(encoded) and (ran == 0 or used + len(encoded[ran].ids) <= REQUEST_TOKENS):
            used, ran = used + len(encoded[ran].ids), ran + 1
        held = predict_batch(loaded, inputs[:ran], limit, batch_size=16)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert held is not None
    return {
        "path": path,
        "lines": lines,
        "ran": ran,
        "base_mb": base,
        "peak_mb": peak,
        "held_mb": rss_mb(),
        "s": seconds,
    }


def main() -> None:
    p = model_parser(__doc__)
    p.add_argument("--lines", default="16,32,64")
    p.add_argument("--tokens", type=int, default=1000)
    p.add_argument("--before-max", type=int, default=16, help="largest N for the old path (it needs GBs)")
    p.add_argument("--child", nargs=2, metavar=("PATH", "LINES"), help=argparse_suppress())
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), args.tokens, args)))
        return
    print(f"model {args.model}, {args.tokens} tokens per line, {args.threads} thread(s); RSS in MB")
    for lines in [int(n) for n in args.lines.split(",")]:
        for path in ("before", "after"):
            if path == "before" and lines > args.before_max:
                print(f"{path:6} {lines:3} lines: not run (above --before-max {args.before_max})")
                continue
            cmd = [sys.executable, __file__, "--child", path, str(lines), "--tokens", str(args.tokens)]
            cmd += ["--model", args.model, "--device", args.device, "--threads", str(args.threads)]
            r = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()[-1])
            print(
                f"{path:6} {lines:3} lines ({r['ran']:2} run): RSS {r['base_mb']:6.0f} -> peak {r['peak_mb']:6.0f} "
                f"(+{r['peak_mb'] - r['base_mb']:5.0f}), held {r['held_mb']:6.0f} (+{r['held_mb'] - r['base_mb']:5.0f}); "
                f"{r['s']:5.1f} s"
            )


def argparse_suppress() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
