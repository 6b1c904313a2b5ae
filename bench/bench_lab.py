"""The Train page's presets on one CPU thread (issue 50, item 7: a visible jump within 20-60 s of training):
"reverse" jumps from near chance to held-out accuracy 0.9 between 20 and 60 s (not before: ``early``, the first
time it reached 0.5, must be >= 20 s), "an induction head appears" has a head with induction score 0.4 within
60 s (its budget is 90), and "why positions matter" (reverse without positions) stays far below.

Time is the training thread's CPU time (``--clock cpu``, the default here): on a machine shared with
other jobs the wall clock also counts the time they took the core; both are reported, with the load average.

    python bench/bench_lab.py --out bench/results/lab.json
    python bench/bench_lab.py --only reverse --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import shared  # noqa: F401  (puts the repository on sys.path)
import torch
from shared import save_report, write_report

from transformer.lab.presets import PRESETS
from transformer.lab.trainer import Trainer, first_reaching

AIMS = {
    "reverse": ("accuracy", 0.9, 60.0),
    "induction": ("induction", 0.4, 60.0),
    "positions": ("accuracy", 0.99, 45.0),
}


def run_preset(name: str, seed: int, clock: str, snapshot_every: float, full: bool) -> dict:
    """Train preset ``name`` at ``seed`` until its aim's budget is spent (or, unless ``full``, the aim is met)."""
    field, threshold, budget = AIMS[name]
    result = run_settings(
        PRESETS[name].settings.replace(seed=seed), (field, threshold, budget), clock, snapshot_every, full
    )
    return {"preset": name, **result}


def run_settings(settings, aim: tuple[str, float, float], clock: str, snapshot_every: float, full: bool) -> dict:
    """Train ``settings`` for the aim's budget (field, threshold, seconds), stopping early once the aim is met
    unless ``full``; the run's summary, its best induction head and its curve."""
    field, threshold, budget = aim
    seed = settings.seed
    trainer = Trainer(settings)
    spent = (lambda: trainer.cpu_seconds) if clock == "cpu" else (lambda: trainer.seconds)
    snaps, last, wall = [trainer.snapshot()], 0.0, time.perf_counter()
    while spent() < budget:
        trainer.step()
        if spent() - last >= snapshot_every:
            snaps.append(trainer.snapshot())
            last = spent()
            if not full and first_reaching(snaps[-1:], field, threshold):
                break
    if snaps[-1].step != trainer.steps:
        snaps.append(trainer.snapshot())
    end = snaps[-1]
    layer, head = divmod(int(end.induction.argmax()), end.induction.shape[1])
    return {
        "seed": seed,
        "aim": f"{field} >= {threshold} within {budget:.0f} s",
        "reached": first_reaching(snaps, field, threshold),
        "early": first_reaching(snaps, "accuracy", 0.5),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "end": end.summary(),
        "best_induction_head": {
            "layer": layer + 1,
            "head": head + 1,
            "by_layer": end.induction.max(1).round(3).tolist(),
        },
        "wall_seconds": round(time.perf_counter() - wall, 1),
        "curve": [s.summary() for s in snaps],
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="+", choices=sorted(AIMS), default=list(AIMS))
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    p.add_argument("--snapshot-every", type=float, default=1.0)
    p.add_argument("--full", action="store_true", help="train the whole budget even after the aim is met")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    torch.set_num_threads(1)
    report = {
        "clock": args.clock,
        "threads": torch.get_num_threads(),
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}; torch {torch.__version__}",
        "presets": {
            name: {"settings": PRESETS[name].settings.to_dict(), "seconds": PRESETS[name].seconds} for name in args.only
        },
        "runs": [],
    }
    for name in args.only:
        for seed in args.seeds:
            result = run_preset(name, seed, args.clock, args.snapshot_every, args.full or name == "positions")
            print({k: v for k, v in result.items() if k != "curve"}, flush=True)
            report["runs"].append(result)
            save_report(report, args.out)
    write_report(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
