"""What the Classifier page decides apart from its layout, as pure functions: the calibration paragraph
chosen from the numbers it shows, the prediction table at the model's temperature, the head switches'
names and what they switch off, head effects at the temperature, and how many integration steps a long
text gets."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from transformer.text.calibration import rescale

from .i18n import class_name_in, translate
from .markdown import md_escape

KINDS = ("integrated", "grad_input", "rollout")  # the attributions, in the order of their tabs
# the two sentences compared by default, in the language the model reads (one negation apart)
COMPARE_DEFAULTS = {
    "en": ("The movie was good.", "The movie was not good."),
    "ko": ("영화가 재미있었다.", "영화가 재미없었다."),
}
CALIBRATION_NEEDS = ("temperature", "test_ece_before", "test_ece_after", "fitted_on", "reliability_before",
                     "reliability_after")  # fmt: skip
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


def prediction_table(rows: list[dict], probabilities, label_names: list[str], temperature: float, lang: str = ""):
    """The batch's table (``BatchPrediction.rows()``) with the probabilities at ``temperature`` and, when that
    is not 1, the model's own top probability beside them as ``raw probability``. ``probabilities`` are the
    raw ones, one row per table row (a row without a number keeps its empty cells). With ``lang``, the
    class names in the labels and the p(…) headings are written in that language."""
    table = _calibrated(pd.DataFrame(rows), probabilities, label_names, temperature)
    if lang and not table.empty:
        table["label"] = [class_name_in(v, lang) if isinstance(v, str) else v for v in table["label"]]
        table = table.rename(columns={f"p({name})": f"p({class_name_in(name, lang)})" for name in label_names})
    return table


def _calibrated(table: pd.DataFrame, probabilities, label_names: list[str], temperature: float) -> pd.DataFrame:
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


KIND_KEYS = {"integrated": "classifier.kind_integrated", "grad_input": "classifier.kind_grad_input",
             "rollout": "classifier.kind_rollout"}  # fmt: skip
BASELINE_KEYS = {"zero": "classifier.baseline_zero", "pad": "classifier.baseline_pad", "unk": "classifier.baseline_unk"}


def kind_name(kind: str, lang: str) -> str:
    return translate(KIND_KEYS[kind], lang)


def baseline_name(baseline: str, lang: str, unk: str = "<unk>", pad: str = "<pad>") -> str:
    """The integrated-gradients baseline in ``lang``, naming the model's own unknown and padding tokens."""
    return translate(BASELINE_KEYS[baseline], lang, unk=unk, pad=pad)


def special_tokens(vocab, pad_id: int) -> dict[str, str]:
    """{"unk": …, "pad": …}: the model's own unknown and padding tokens ("[UNK]" for a BERT vocabulary)."""
    itos = vocab.itos
    unk = itos[vocab.unk_id] if vocab.unk_id is not None and 0 <= vocab.unk_id < len(itos) else "<unk>"
    pad = itos[pad_id] if 0 <= pad_id < len(itos) else "<pad>"
    return {"unk": unk, "pad": pad}


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


def calibration_info(folder: Path) -> dict | None:
    """The ``calibration`` entry of a bundled model's metrics.json, None when the folder has none or it
    lacks a measurement the page shows."""
    metrics = folder / "metrics.json"
    try:
        info = json.loads(metrics.read_text(encoding="utf-8")).get("calibration") if metrics.is_file() else None
    except (OSError, ValueError, AttributeError):
        return None
    return info if isinstance(info, dict) and all(key in info for key in CALIBRATION_NEEDS) else None


def table_columns(calibrated: bool, lang: str) -> dict:
    """The prediction table's column headings in ``lang`` (the probability says whether it is calibrated)."""
    import streamlit as st

    def tr(key: str) -> str:
        return translate(key, lang)

    config = st.column_config
    probability = tr("classifier.col_probability_calibrated" if calibrated else "classifier.col_probability_raw")
    return {
        "probability": config.ProgressColumn(probability, min_value=0.0, max_value=1.0, format="%.3f"),
        "raw probability": config.NumberColumn(tr("classifier.col_probability_raw"), format="%.3f"),
        "text": config.TextColumn(tr("classifier.col_text"), width="medium"),
        "line": config.NumberColumn(tr("classifier.col_line")),
        "label": config.TextColumn(tr("classifier.col_label")),
        "tokens": config.NumberColumn(tr("classifier.col_tokens")),
        "truncated": config.CheckboxColumn(tr("classifier.col_truncated")),
    }


def colour_legend(attr, lang: str) -> str:
    """What blue and red mean: towards the second of two classes, or towards the explained class."""
    names = attr.label_names
    if len(names) == 2:
        positive, negative = (md_escape(class_name_in(name, lang)) for name in (names[1], names[0]))
        return translate("classifier.legend_binary", lang, positive=positive, negative=negative)
    return translate("classifier.legend_class", lang, label=md_escape(class_name_in(attr.target_label, lang)))


def attribution_captions(attr, lang: str, **specials: str) -> dict[str, str]:
    """The caption under each attribution's strip, with the integrated-gradients sums it shows."""
    label = md_escape(class_name_in(attr.target_label, lang))
    integrated = translate(
        "classifier.caption_integrated",
        lang,
        steps=attr.ig_steps,
        rule=attr.ig_rule,
        baseline=baseline_name(attr.ig_baseline, lang, **specials),
        label=label,
        start=f"{attr.ig_start:+.3f}",
        end=f"{attr.ig_end:+.3f}",
        total=f"{attr.integrated.sum():+.3f}",
        error=f"{attr.ig_error:.2e}",
        share=f"{attr.ig_error / max(abs(attr.ig_delta), 1e-12):.2%}",
    )
    return {
        "rollout": translate("classifier.caption_rollout", lang),
        "grad_input": translate("classifier.caption_grad_input", lang, label=label),
        "integrated": integrated,
    }


def line_list(numbers: list[int], limit: int = 20) -> str:
    """ "3, 5, 8" — the first ``limit`` line numbers, "…" when there are more."""
    return ", ".join(str(n) for n in numbers[:limit]) + ("…" if len(numbers) > limit else "")


def prediction_line(attr, temperature: float, lang: str) -> str:
    """ "Prediction: **positive** (0.972); 17 tokens." at the model's temperature."""
    p = rescale(attr.probabilities, temperature).max()
    cut = translate("classifier.cut", lang) if attr.truncated else ""
    label = md_escape(class_name_in(attr.label_names[attr.predicted], lang))
    return translate("classifier.prediction_line", lang, label=label, p=f"{p:.3f}", tokens=len(attr.tokens), cut=cut)


def calibration_captions(info: dict, fitted: str, lang: str) -> list[str]:
    """The calibration paragraph (worded by :func:`calibration_wording`) and, for a temperature fitted on a
    mix, what it did on the held-out short sentences."""
    key, numbers = calibration_wording(info)
    captions = [translate(key, lang, **numbers, fitted=fitted) + " " + translate("classifier.calibration_use", lang)]
    if "reliability_after_short_sentences" in info:
        before, after = f"{info['short_sentences_ece_before']:.3f}", f"{info['short_sentences_ece_after']:.3f}"
        captions.append(translate("classifier.calibration_short_text", lang, before=before, after=after))
    return captions


def reliability_sets(info: dict) -> list[tuple[str, str]]:
    """(key suffix, title key) of each reliability diagram: the test split, and the held-out short sentences
    when the temperature was fitted on a mix of long reviews and short sentences."""
    sets = [("", "classifier.calibration_long")]
    if "reliability_after_short_sentences" in info:
        sets.append(("_short_sentences", "classifier.calibration_short"))
    return sets
