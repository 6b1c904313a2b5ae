"""What the Classifier page decides apart from its layout, as pure functions: the calibration paragraph
chosen from the numbers it shows, the prediction table at the model's temperature, the head switches'
names and what they switch off, head effects at the temperature, and how many integration steps a long
text gets."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from transformer.text.calibration import rescale

from .i18n import class_name_in, translate

IG_TOKEN_STEPS = 4_096  # tokens × integration steps one explanation runs at most (50 steps up to 81 tokens)
IG_LEAST_STEPS = 4  # the slider's own minimum
WHOLE_LAYER = -1  # the switch that turns a layer's attention off, beside its heads (0-based) on one row
SAME_ECE = 0.0005  # ECEs closer than this read the same at three decimals


def ig_steps(tokens: int, asked: int, budget: int = IG_TOKEN_STEPS) -> int:
    """The integration steps one sentence of ``tokens`` tokens gets: the ``asked`` steps, fewer on a long
    text so that tokens × steps stays within ``budget`` (at least :data:`IG_LEAST_STEPS`). A 512-token
    review at 50 steps took 21 CPU s on one thread (minilm-sentiment); within the budget, 8 steps."""
    return max(IG_LEAST_STEPS, min(asked, budget // max(tokens, 1)))


def calibration_wording(info: dict) -> tuple[str, dict[str, str]]:
    """The calibration paragraph's catalogue key and fields, chosen from the measured expected calibration
    errors (ECE) on the test split before and after the temperature: better, the same, or worse (a
    temperature fitted on other data than the test split can make the test split's ECE worse). ``info``
    is a bundled model's ``metrics.json`` ``calibration`` entry."""
    before, after = float(info["test_ece_before"]), float(info["test_ece_after"])
    temperature = float(info["temperature"])
    fields = {"t": f"{temperature:.2f}", "before": f"{before:.3f}", "after": f"{after:.3f}"}
    if abs(after - before) < SAME_ECE:
        return "classifier.calibration_same", fields
    if after < before:
        return ("classifier.calibration_text" if temperature > 1 else "classifier.calibration_text_under"), fields
    return ("classifier.calibration_worse" if temperature > 1 else "classifier.calibration_worse_under"), fields


def prediction_table(rows: list[dict], probabilities: np.ndarray, label_names: list[str], temperature: float):
    """The batch's table (``BatchPrediction.rows()``) with the probabilities at ``temperature`` and, when that
    is not 1, the model's own top probability beside them as ``raw probability``. ``probabilities`` are the
    raw ones, one row per table row (a row without a number keeps its empty cells)."""
    table = pd.DataFrame(rows)
    if temperature == 1.0 or table.empty:
        return table
    table.insert(int(table.columns.get_loc("probability")) + 1, "raw probability", table["probability"])
    missing = table["probability"].isna().to_numpy()
    calibrated = rescale(np.asarray(probabilities), temperature)
    table["probability"] = np.where(missing, np.nan, calibrated.max(axis=1).round(4))
    for k, name in enumerate(label_names):
        table[f"p({name})"] = np.where(missing, np.nan, calibrated[:, k].round(4))
    return table


def table_caption(count: int, lang: str) -> str:
    """ "1 sentence" / "12 sentences" and how to read the table."""
    key = "classifier.table_caption_one" if count == 1 else "classifier.table_caption"
    return translate(key, lang, count=f"{count:,}")


def switch_label(layer: int, head: int, lang: str) -> str:
    """A head's switch, in full ("L3 H7": 1-based), or the whole layer's."""
    if head == WHOLE_LAYER:
        return translate("classifier.whole_layer", lang)
    return translate("classifier.head_switch", lang, layer=layer + 1, head=head + 1)


def switched_off(choices: dict[int, list[int]], num_layers: int) -> tuple[list[tuple[int, int]], list[int]]:
    """(heads off, layers off) from each layer's chosen switches ({layer: [head or WHOLE_LAYER]}, 0-based);
    a layer switched off as a whole counts once, not also as its heads."""
    layers = [layer for layer in range(num_layers) if WHOLE_LAYER in choices.get(layer, ())]
    heads = [
        (layer, head)
        for layer in range(num_layers)
        if layer not in layers
        for head in sorted(choices.get(layer, ()))
        if head != WHOLE_LAYER
    ]
    return heads, layers


def calibrated_effects(effects, num_labels: int, temperature: float):
    """Head effects with p(target) at the model's temperature (two classes: σ(log-odds / T))."""
    if temperature == 1.0 or num_labels != 2:
        return effects

    def scale(p):
        p = np.clip(np.asarray(p, dtype=np.float64), 1e-12, 1 - 1e-12)
        return 1 / (1 + np.exp(-np.log(p / (1 - p)) / temperature))

    return replace(effects, base=float(scale(effects.base)), heads=scale(effects.heads), layers=scale(effects.layers))


def effect_name(layer: int, head: int | None, lang: str) -> str:
    """ "layer 2, head 3" or "layer 2, all heads" in ``lang`` (1-based numbers, as the ranking gives them)."""
    if head is None:
        return translate("classifier.rank_layer", lang, layer=layer)
    return translate("classifier.rank_head", lang, layer=layer, head=head)


def effects_table(ranking: list[dict], label: str, lang: str) -> pd.DataFrame:
    """The head ranking as the page's table: what was switched off, its layer and head, p and the change."""
    p_label, every = f"p({label})", translate("classifier.all_heads", lang)
    return pd.DataFrame(
        [
            {
                translate("classifier.col_switched_off", lang): effect_name(r["layer"], r["head"], lang),
                translate("classifier.col_layer", lang): r["layer"],
                translate("classifier.col_head", lang): every if r["head"] is None else str(r["head"]),
                p_label: r[p_label],
                translate("classifier.col_change", lang): r["change"],
            }
            for r in ranking
        ]
    )


def kind_name(kind: str, lang: str) -> str:
    return translate(f"classifier.kind_{kind}", lang)


def baseline_name(baseline: str, lang: str) -> str:
    return translate(f"classifier.baseline_{baseline}", lang)


def evidence_rows(evidence, lang: str) -> list[dict]:
    """The top tokens of rollout and of integrated gradients side by side, one row per rank."""
    return [
        {
            translate("classifier.col_rank", lang): k + 1,
            translate("classifier.col_rollout", lang): f"{tok} ({pos}) {val:.3f}",
            translate("classifier.col_integrated", lang): f"{t2} ({p2}) {v2:+.3f}",
        }
        for k, ((pos, tok, val), (p2, t2, v2)) in enumerate(zip(evidence.top_rollout, evidence.top_integrated))
    ]


def class_names(names, lang: str) -> list[str]:
    return [class_name_in(name, lang) for name in names]
