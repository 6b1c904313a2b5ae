"""Why the Train page's models have an output layer of their own: the induction preset's task with the output
layer tied to the input embedding (the bundled language model's choice) and untied, for learned and rotary
positions (``--feed-forward no`` for attention-only layers too), several seeds, on one CPU thread.

Reported per run: the best head's induction score (the atlas's probe: attention to the token right after
the earlier occurrence) and its layer, the best previous-token score on the example row, the held-out accuracy,
and the CPU seconds at which a head first scored 0.4.

    python bench/bench_lab_tying.py --seconds 120 --seeds 0 1 2 --out bench/results/lab_tying.json

What it showed (docs/models.md, "Training live"): tied, the task is solved (held-out accuracy up to 0.92) without any
head reaching 0.4; untied, with learned positions, a previous-token head and an induction head form within a
minute (seeds 0 and 1); with rotary positions neither tied nor untied forms the textbook circuit.
"""

from __future__ import annotations

import argparse
import itertools
import platform
import sys

import shared  # noqa: F401  (puts the repository on sys.path)
import torch
from bench_lab import run_settings
from shared import save_report, write_report

from transformer.lab.presets import PRESETS


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=90.0, help="CPU seconds per run")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--positional", nargs="+", default=["learned", "rotary"])
    p.add_argument("--feed-forward", nargs="+", choices=("yes", "no"), default=["yes"])
    p.add_argument("--out", default=None)
    args = p.parse_args()
    torch.set_num_threads(1)
    base = PRESETS["induction"].settings
    report = {
        "clock": "cpu",
        "seconds": args.seconds,
        "machine": f"{platform.machine()}; torch {torch.__version__}; 1 thread",
        "base_settings": base.to_dict(),
        "runs": [],
    }
    grid = itertools.product(args.positional, args.feed_forward, (True, False), args.seeds)
    for positional, ffn, tied, seed in grid:
        settings = base.replace(positional=positional, feed_forward=ffn == "yes", tied_output=tied, seed=seed)
        result = run_settings(settings, ("induction", 0.4, args.seconds), "cpu", 1.0, full=True)
        end = result["end"]
        row = {
            "positional": positional,
            "feed_forward": ffn == "yes",
            "tied_output": tied,
            "seed": seed,
            "induction": end["induction"],
            "induction_layer": result["best_induction_head"]["layer"],
            "previous": end["previous"],
            "accuracy": end["accuracy"],
            "first_induction_0.4_cpu_seconds": (result["reached"] or {}).get("cpu_seconds"),
            "steps": end["step"],
        }
        print(row, flush=True)
        report["runs"].append(row)
        save_report(report, args.out)
    write_report(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
