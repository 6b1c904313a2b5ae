"""Temperature scaling (Guo et al., 2017): how far a classifier's probabilities can be trusted.

A temperature ``T`` divides the logits before the softmax: ``softmax(z / T)``. It never changes
which class wins, only how sure the model claims to be. ``T`` is fitted on the validation split
(minimum negative log-likelihood); the expected calibration error (ECE) is then measured on the
test split before and after::

    python -m transformer.text.calibration --model assets/models/imdb-sentiment --write

The validation split is carved from IMDB's train split exactly as ``transformer.text.train`` did
(``train_val_split`` with the fraction and seed recorded in the model's ``metrics.json``).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

LOG_T_RANGE = (-4.0, 4.0)  # temperatures from e^-4 ≈ 0.018 to e^4 ≈ 55
DEFAULT_BINS = 10


def softmax(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """(N, K) logits -> (N, K) probabilities of ``softmax(logits / temperature)`` (float64)."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def rescale(probabilities: np.ndarray, temperature: float) -> np.ndarray:
    """(..., K) softmax probabilities -> the same at ``temperature``: softmax(log p / T) equals
    softmax(z / T) for any logits z with softmax(z) = p."""
    with np.errstate(divide="ignore"):
        return softmax(np.log(np.asarray(probabilities, dtype=np.float64)), temperature)


def negative_log_likelihood(logits: np.ndarray, labels: np.ndarray, temperature: float = 1.0) -> float:
    """Mean −log p(true label) of ``softmax(logits / temperature)``; logits (N, K), labels (N,)."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    z = z - z.max(axis=-1, keepdims=True)
    log_norm = np.log(np.exp(z).sum(axis=-1))
    return float(np.mean(log_norm - z[np.arange(len(z)), np.asarray(labels)]))


def fit_temperature(logits: np.ndarray, labels: np.ndarray, iterations: int = 80) -> float:
    """The temperature minimising the NLL of ``labels`` under ``softmax(logits / T)``.

    logits (N, K), labels (N,) ints. The NLL is convex in 1/T, hence unimodal in log T: a golden
    section search over log T in ``LOG_T_RANGE`` finds the minimum to ~1e-12 in 80 steps.
    """
    logits, labels = np.asarray(logits, dtype=np.float64), np.asarray(labels)
    if logits.ndim != 2 or len(logits) != len(labels) or len(labels) == 0:
        raise ValueError(f"Need (N, K) logits and N labels; got {logits.shape} and {labels.shape}.")
    if not np.isfinite(logits).all():
        raise ValueError("The logits hold NaN or infinite values: a temperature cannot be fitted.")
    ratio = (math.sqrt(5) - 1) / 2
    low, high = LOG_T_RANGE
    loss = lambda log_t: negative_log_likelihood(logits, labels, math.exp(log_t))  # noqa: E731
    a, b = high - ratio * (high - low), low + ratio * (high - low)
    fa, fb = loss(a), loss(b)
    for _ in range(iterations):
        if fa <= fb:
            high, b, fb = b, a, fa
            a = high - ratio * (high - low)
            fa = loss(a)
        else:
            low, a, fa = a, b, fb
            b = low + ratio * (high - low)
            fb = loss(b)
    return math.exp((low + high) / 2)


@dataclass(frozen=True)
class Reliability:
    """Confidence bins of width 1/bins over [0, 1]; each array has one entry per bin (NaN: empty).

    confidence: mean top-class probability in the bin; accuracy: share right in the bin;
    count: inputs in the bin; ece: sum over bins of count/N × |accuracy − confidence|."""

    edges: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray
    count: np.ndarray
    ece: float

    def to_dict(self) -> dict:
        """JSON-ready (empty bins as null)."""

        def clean(values):
            return [None if not np.isfinite(v) else round(float(v), 6) for v in values]

        return {
            "edges": clean(self.edges),
            "confidence": clean(self.confidence),
            "accuracy": clean(self.accuracy),
            "count": [int(c) for c in self.count],
            "ece": round(self.ece, 6),
        }

    @classmethod
    def from_dict(cls, data: dict) -> Reliability:
        def arr(values):
            return np.array([np.nan if v is None else v for v in values], dtype=np.float64)

        return cls(
            arr(data["edges"]), arr(data["confidence"]), arr(data["accuracy"]), np.array(data["count"]), data["ece"]
        )


def reliability(probabilities: np.ndarray, labels: np.ndarray, bins: int = DEFAULT_BINS) -> Reliability:
    """Bin inputs by their top-class probability; probabilities (N, K), labels (N,)."""
    probabilities, labels = np.asarray(probabilities, dtype=np.float64), np.asarray(labels)
    confidence = probabilities.max(axis=-1)
    correct = probabilities.argmax(axis=-1) == labels
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(confidence, edges[1:-1], right=True), 0, bins - 1)
    count = np.bincount(which, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf = np.bincount(which, weights=confidence, minlength=bins) / count
        acc = np.bincount(which, weights=correct.astype(np.float64), minlength=bins) / count
    gaps = np.where(count > 0, np.abs(acc - conf), 0.0)
    ece = float(np.sum(count * gaps) / max(1, len(labels)))
    return Reliability(edges, conf, acc, count, ece)


def expected_calibration_error(probabilities: np.ndarray, labels: np.ndarray, bins: int = DEFAULT_BINS) -> float:
    """ECE with ``bins`` equal-width confidence bins; probabilities (N, K), labels (N,)."""
    return reliability(probabilities, labels, bins).ece


def _logits_of(loaded, examples, max_len: int) -> tuple[np.ndarray, np.ndarray]:
    from .predict import predict_logits

    logits = predict_logits(loaded, [ex.text for ex in examples], max_len)
    return logits, np.array([ex.label for ex in examples])


@dataclass
class CalibrationData:
    """Examples to fit the temperature on, and named sets to measure it on."""

    fit: list
    fit_note: str
    measured: dict  # name -> examples; the first is the headline (test_* keys)


def calibration_data(dataset: str, data: Path, split: dict, sst2: Path | None = None) -> CalibrationData:
    """The validation examples carved from train as in training (same fraction and seed), and the test split.

    ``imdb+sst2``: the temperature is fitted on IMDB's validation reviews plus half of SST-2's validation
    sentences; the other half measures it on short sentences (SST-2's own test split is not here)."""
    from ..datasets.imdb import load_imdb, train_val_split
    from .corpora import load_nsmc, load_sst2

    fraction, seed, block = split["val_fraction"], split["seed"], split.get("val_block", 1)
    if dataset == "nsmc":
        _, val = train_val_split(load_nsmc(data, "train"), fraction, seed)
        note = f"validation ({len(val):,} reviews carved from train, seed {seed})"
        return CalibrationData(val, note, {"test": load_nsmc(data, "test")})
    _, val = train_val_split(load_imdb(data, "train"), fraction, seed, block)
    test = load_imdb(data, "test")
    if dataset != "imdb+sst2":
        note = f"validation ({len(val):,} reviews carved from train, seed {seed})"
        return CalibrationData(val, note, {"test": test})
    _, short_val = train_val_split(load_sst2(sst2), fraction, seed)
    fit_short, held_short = short_val[::2], short_val[1::2]
    note = f"validation: {len(val):,} IMDB reviews + {len(fit_short):,} SST-2 sentences carved from train, seed {seed}"
    return CalibrationData(val + fit_short, note, {"test": test, "short_sentences": held_short})


def calibrate_bundle(
    model_dir: Path, data: Path, bins: int = DEFAULT_BINS, dataset: str = "imdb", sst2: Path | None = None
) -> dict:
    """Fit T on the validation split of ``data`` and measure ECE on its test split (and, for ``imdb+sst2``,
    on held-out short sentences); no file written."""
    from ..bundle import load_bundle

    loaded = load_bundle(model_dir)
    split = json.loads((model_dir / "metrics.json").read_text(encoding="utf-8"))["data"]
    sets = calibration_data(dataset, data, split, sst2)
    max_len = loaded.config.default_max_tokens or loaded.config.max_len
    val_logits, val_labels = _logits_of(loaded, sets.fit, max_len)
    temperature = fit_temperature(val_logits, val_labels)
    result = {
        "temperature": round(temperature, 4),
        "fitted_on": sets.fit_note,
        "measured_on": f"test ({len(sets.measured['test']):,} reviews)",
        "validation_nll_before": round(negative_log_likelihood(val_logits, val_labels), 4),
        "validation_nll_after": round(negative_log_likelihood(val_logits, val_labels, temperature), 4),
        "bins": bins,
    }
    for name, examples in sets.measured.items():
        logits, labels = _logits_of(loaded, examples, max_len)
        before = reliability(softmax(logits), labels, bins)
        after = reliability(softmax(logits, temperature), labels, bins)
        result.update(
            {
                f"{name}_nll_before": round(negative_log_likelihood(logits, labels), 4),
                f"{name}_nll_after": round(negative_log_likelihood(logits, labels, temperature), 4),
                f"{name}_ece_before": round(before.ece, 4),
                f"{name}_ece_after": round(after.ece, 4),
                f"{name}_accuracy": round(float((logits.argmax(-1) == labels).mean()), 4),
            }
        )
        key = "" if name == "test" else f"_{name}"
        result[f"reliability_before{key}"] = before.to_dict()
        result[f"reliability_after{key}"] = after.to_dict()
    return result


def write_calibration(model_dir: Path, result: dict) -> None:
    """Store ``temperature`` in config.json and the measurements under ``calibration`` in metrics.json."""
    for name, update in (("config.json", {"temperature": result["temperature"]}), ("metrics.json", None)):
        path = model_dir / name
        data = json.loads(path.read_text(encoding="utf-8"))
        if update is None:
            data["calibration"] = result
        else:
            data.update(update)
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m transformer.text.calibration", description=__doc__.split("\n")[0])
    p.add_argument("--model", default="assets/models/imdb-sentiment", help="bundled-model folder")
    p.add_argument("--dataset", default="imdb", choices=["imdb", "imdb+sst2", "nsmc"], help="what it was trained on")
    p.add_argument("--data", default=None, help="aclImdb/ folder or aclImdb_v1.tar.gz; for nsmc its folder")
    p.add_argument("--sst2", default=None, help="stsa.binary.train (imdb+sst2)")
    p.add_argument("--bins", type=int, default=DEFAULT_BINS)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--write", action="store_true", help="store the result in the model's config and metrics")
    args = p.parse_args(argv)
    import torch

    from ..datasets.imdb import default_imdb_path
    from .corpora import default_nsmc_dir, default_sst2_path

    torch.set_num_threads(args.threads)
    default = default_nsmc_dir() if args.dataset == "nsmc" else default_imdb_path()
    data = Path(args.data) if args.data else default
    sst2 = Path(args.sst2) if args.sst2 else default_sst2_path()
    try:
        result = calibrate_bundle(Path(args.model), data, args.bins, args.dataset, sst2)
    except (FileNotFoundError, ValueError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    result["command"] = "python -m transformer.text.calibration " + shlex.join(sys.argv[1:] if argv is None else argv)
    if args.write:
        write_calibration(Path(args.model), result)
    print(json.dumps({k: v for k, v in result.items() if not k.startswith("reliability")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
