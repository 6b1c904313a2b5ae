"""``python -m transformer lab``: train a small Transformer on a toy task and print one JSON line.

    python -m transformer lab --task reverse --seconds 90 --seed 0
    python -m transformer lab --preset induction

The line holds the held-out accuracy (share of answer tokens right) and exact-row accuracy, the best
head's induction score and previous-token score, steps, seconds, and when the run first reached
accuracy 0.99 and an induction score of 0.4. Training runs on one CPU thread.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

from .export import save_lab_model
from .presets import PRESETS
from .tasks import TASKS
from .trainer import LabSettings, first_reaching, positionals, train_for


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m transformer lab", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--preset", choices=sorted(PRESETS), help="a teacher's preset (its settings and seconds)")
    p.add_argument("--task", choices=TASKS, help="default reverse (or the preset's)")
    p.add_argument("--seconds", type=float, help="training time, measurements included (default 60 or the preset's)")
    p.add_argument("--steps", type=int, default=0, help="stop after this many steps too (0: no limit)")
    p.add_argument("--seed", type=int, help="default 0")
    p.add_argument("--length", type=int, help="symbols per sequence")
    p.add_argument("--symbols", type=int, help="size of the alphabet")
    p.add_argument("--layers", type=int)
    p.add_argument("--heads", type=int)
    p.add_argument("--d-model", type=int)
    p.add_argument("--attention-only", action="store_true", help="layers without the feed-forward block")
    p.add_argument("--positional", choices=positionals())
    p.add_argument(
        "--tied-output", action="store_true", help="the output layer is the input embedding (default: its own)"
    )
    p.add_argument("--lr", type=float)
    p.add_argument("--batch", type=int)
    p.add_argument("--snapshot-every", type=float, default=1.0, help="seconds between measurements")
    p.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="what --seconds counts: elapsed time, or the training thread's CPU time (on a busy machine)",
    )
    p.add_argument("--out", help="also save the trained model as a bundled-model folder here")
    p.add_argument("--curve", action="store_true", help="add every measurement to the JSON line")
    return p


def settings_from(args: argparse.Namespace) -> tuple[LabSettings, float]:
    preset = PRESETS[args.preset] if args.preset else None
    settings = preset.settings if preset else LabSettings()
    changes = {
        name: value
        for name, value in (
            ("task", args.task), ("seed", args.seed), ("length", args.length), ("symbols", args.symbols),
            ("layers", args.layers), ("heads", args.heads), ("d_model", args.d_model),
            ("positional", args.positional), ("lr", args.lr), ("batch", args.batch),
        )
        if value is not None
    }  # fmt: skip
    if args.attention_only:
        changes["feed_forward"] = False
    if args.tied_output:
        changes["tied_output"] = True
    seconds = args.seconds if args.seconds is not None else (preset.seconds if preset else 60.0)
    if seconds <= 0:
        raise ValueError("--seconds must be positive.")
    return settings.replace(**changes), seconds


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        settings, seconds = settings_from(args)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    trainer, snapshots = train_for(settings, seconds, args.steps, args.snapshot_every, args.clock)
    last = snapshots[-1]
    best = np.unravel_index(int(np.argmax(last.induction)), last.induction.shape)
    record = {
        "task": settings.task,
        "seed": settings.seed,
        "accuracy": round(last.accuracy, 4),
        "exact": round(last.exact, 4),
        "induction": round(float(last.induction.max()), 4),
        "induction_head": {"layer": int(best[0]), "head": int(best[1])},
        "previous": round(float(last.previous.max()), 4),
        "loss": round(last.loss, 4),
        "steps": last.step,
        "seconds": round(last.seconds, 2),
        "cpu_seconds": round(last.cpu_seconds, 2),
        "first_accuracy_0.99": first_reaching(snapshots, "accuracy", 0.99),
        "first_induction_0.4": first_reaching(snapshots, "induction", 0.4),
        "clock": args.clock,
        "settings": settings.to_dict(),
        "threads": torch.get_num_threads(),
    }
    if args.curve:
        record["curve"] = [s.summary() for s in snapshots]
    if args.out:
        save_lab_model(Path(args.out), trainer, last)
        record["out"] = args.out
    print(json.dumps(record), flush=True)
    return 0
