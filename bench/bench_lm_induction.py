"""Does a language model copy a repeated span, and with which circuit? Random token ids written twice,
scored two ways, at rows of 31 and 101 tokens.

Run: python bench/bench_lm_induction.py --models assets/models/review-lm [other folders] [--out results.json]

Rows: ``<|endoftext|>`` then a span of ``period`` uniform random ids from the model's probe range
(``metrics.json``; every non-special id by default) and the same span again: period 15 (31 tokens) and
50 (101 tokens), 16 rows each, seed 0 (``transformer.lm.induction``, the probe the training curve and the
head atlas use).

Per model and length:
- ``best_head``: the head with the highest induction score (mean attention from each token of the second
  copy to the token right after its earlier occurrence: the textbook circuit the atlas names "induction");
- ``offsets``: for that head and for the head of the last layer that attends most to the earlier copy, the
  mean attention from the second copy to the earlier occurrence shifted by -1 .. +4 (``+1`` is the induction
  score; a circuit that attends ``+3`` copies as well but is not the textbook one);
- ``loss_first_copy`` / ``loss_second_copy``: mean next-token cross-entropy (nats) on the tokens of each copy
  (the second copy's first token excluded: nothing says what it is); a model that copies predicts the second
  copy far better than the first (ln 8000 = 8.99 nats is a uniform guess).
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch
import torch.nn.functional as F
from shared import ROOT, save_report  # noqa: F401  (puts the repository on sys.path)

from transformer.bundle import load_bundle
from transformer.lm.induction import PROBE_BATCH, probe_range, repeated_random_tokens

PERIODS = (15, 50)
OFFSETS = range(-1, 5)


def offset_profile(weights: np.ndarray, period: int) -> dict[int, float]:
    """Mean attention from each token of the second copy to its earlier occurrence shifted by k, for one
    head's (B, T, T) weights of rows ``start, span, span``."""
    out = {}
    for k in OFFSETS:
        cols = [(1 + period + j, 1 + j + k) for j in range(1, period - 1) if 0 <= 1 + j + k <= period + j]
        out[k] = round(float(np.mean([weights[:, q, c].mean() for q, c in cols])), 4)
    return out


@torch.no_grad()
def measure_length(model, period: int, first: int, end: int) -> dict:
    config = model.config
    ids = repeated_random_tokens(PROBE_BATCH, period, end, first, config.bos_id, seed=0)
    out = model(ids, need_weights=True)
    weights = np.stack([a.weights.float().numpy() for a in out.attention])  # (L, B, H, T, T)
    logp = F.log_softmax(out.logits.float(), dim=-1)  # (B, T, V)
    nll = -logp[:, :-1].gather(-1, ids[:, 1:, None]).squeeze(-1)  # (B, T-1): loss of predicting token t+1
    first_copy = nll[:, 1:period].mean()  # tokens 2..period of the first copy
    second_copy = nll[:, period + 1 : 2 * period].mean()  # tokens 2..period of the second copy
    j = np.arange(period - 1)
    scores = weights[..., 1 + period + j, 1 + j + 1].mean(-1).mean(1)  # (L, H)
    layer, head = divmod(int(scores.argmax()), scores.shape[1])
    near = [weights[:, :, :, 1 + period + j, 1 + j + k].mean(-1).mean(1) for k in (0, 1, 2, 3)]
    back = np.stack(near).sum(0)  # (L, H): attention to the earlier copy near the occurrence
    last = weights.shape[0] - 1
    copy_head = int(back[last].argmax())
    return {
        "tokens": 1 + 2 * period,
        "best_head": {"layer": layer + 1, "head": head + 1, "score": round(float(scores[layer, head]), 4)},
        "scores": scores.round(4).tolist(),
        "offsets_best_head": offset_profile(weights[layer, :, head], period),
        "last_layer_copy_head": {"layer": last + 1, "head": copy_head + 1},
        "offsets_last_layer_copy_head": offset_profile(weights[last, :, copy_head], period),
        "loss_first_copy": round(float(first_copy), 3),
        "loss_second_copy": round(float(second_copy), 3),
    }


def measure(folder: str) -> dict:
    loaded = load_bundle(folder)
    model = loaded.model.eval()
    metrics_path = ROOT / folder / "metrics.json" if not folder.startswith("/") else None
    metrics = json.loads(open(metrics_path or f"{folder}/metrics.json").read())
    first, end = probe_range(metrics, model.config.vocab_size)
    result = {"probe_ids": [first, end], "validation": metrics.get("validation")}
    for period in PERIODS:
        result[str(1 + 2 * period)] = measure_length(model, period, first, end)
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", default=["assets/models/review-lm"])
    p.add_argument("--out", default=None)
    args = p.parse_args()
    torch.set_num_threads(1)
    report = {"method": __doc__.split("\n\n")[1].replace("\n", " "), "models": {}}
    for folder in args.models:
        report["models"][folder] = measure(folder)
        row = report["models"][folder]
        for length in ("31", "101"):
            r = row[length]
            print(
                f"{folder} {length} tokens: best head L{r['best_head']['layer']}H{r['best_head']['head']} "
                f"{r['best_head']['score']}; loss first/second copy {r['loss_first_copy']}/{r['loss_second_copy']}; "
                f"offsets (best) {r['offsets_best_head']}; last-layer copy head {r['last_layer_copy_head']} "
                f"{r['offsets_last_layer_copy_head']}"
            )
    if args.out:
        save_report(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
