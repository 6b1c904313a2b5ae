"""Mean IoU of a bundled shape segmenter per scene condition (transformer.vision.shapes.CONDITIONS:
the first training range, small objects, noise σ 0.2, 4-6 objects), on fresh seeded scenes.

Run: python bench/bench_shapes_conditions.py [--model assets/models/vit-shapes] [--scenes 500]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from transformer.vision.bundle import load_vision_bundle  # noqa: E402
from transformer.vision.train import condition_scores  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(ROOT / "assets" / "models" / "vit-shapes"))
    p.add_argument("--scenes", type=int, default=500)
    p.add_argument("--seed", type=int, default=0, help="the seed train.py measures with (its --seed)")
    p.add_argument("--out", default=None, help="write the scores as JSON here")
    args = p.parse_args()
    torch.set_num_threads(1)
    model = load_vision_bundle(args.model, "cpu").model
    scores = condition_scores(model, args.scenes, args.seed)
    for name, s in scores.items():
        print(f"{s['mean_iou_shapes']:.3f}  {name}")
    if args.out:
        Path(args.out).write_text(json.dumps({"model": args.model, "conditions": scores}, indent=2) + "\n")


if __name__ == "__main__":
    main()
