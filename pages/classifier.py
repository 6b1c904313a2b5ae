"""Classifier: predictions for many sentences, which tokens drove one of them, and what happens
when attention heads are switched off. Computations live in ``transformer`` (predict,
attribution, ablation); figures in ``ui.figures.classifier``."""

import numpy as np
import pandas as pd
import streamlit as st

from transformer.ablation import head_effects, head_mask, masked_probabilities
from transformer.attribution import BASELINES, RULES, attention_vs_attribution, attribute, compare, sentence_ids
from transformer.predict import MAX_FILE_BYTES, MAX_FILE_LINES, predict_batch, read_lines
from ui.figures import classifier as figs
from ui.markdown import md_escape
from ui.models import current_selection, get_model
from ui.text import chosen_sentence, split_lines, text_box

MEMO_KEY = "classifier_memo"
RANK_KEY = "classifier_rank_request"  # the sentence whose head ranking was asked for
PROGRESS_FROM = 65  # lines; shorter batches finish before a bar would be seen
KINDS = {"integrated": "Integrated gradients", "grad_input": "Gradient × input", "rollout": "Attention rollout"}
RULE_NAMES = {"gauss-legendre": "Gauss–Legendre", "trapezoid": "trapezoid"}
BASELINE_NAMES = {"zero": "all-zero token embeddings", "pad": "<pad> embeddings"}


def memo(key: tuple, compute):
    """This session's results by key (bounded): reruns caused by other widgets cost nothing."""
    store = st.session_state.setdefault(MEMO_KEY, {})
    if key not in store:
        if len(store) > 24:
            store.clear()
        store[key] = compute()
    return store[key]


def input_lines() -> list[str]:
    """Lines of the uploaded file when there is one, else of the shared text box."""
    text = text_box()
    with st.expander("…or upload a .txt file (one sentence per line)"):
        upload = st.file_uploader(
            f"UTF-8 text, at most {MAX_FILE_LINES:,} lines and {MAX_FILE_BYTES // 1_000_000} MB",
            type=["txt"],
            key="classifier_file",
        )
    if upload is None:
        return split_lines(text)
    try:
        lines, blank = read_lines(upload.getvalue())
    except ValueError as err:
        st.error(f"{upload.name}: {err}")
        return []
    st.caption(f"Using {len(lines):,} lines of {upload.name}" + (f" ({blank} blank lines skipped)." if blank else "."))
    return lines


def batch_table(selection, loaded, lines: list[str]):
    st.subheader("Predictions")

    def run():
        bar = st.progress(0.0, text="Predicting…") if len(lines) >= PROGRESS_FROM else None
        update = None if bar is None else (lambda done, total: bar.progress(done / total, text=f"{done:,} / {total:,}"))
        result = predict_batch(loaded, lines, selection.max_len, progress=update)
        if bar is not None:
            bar.empty()
        return result

    batch = memo(("batch", selection, tuple(lines)), run)
    if batch.skipped:
        numbers = ", ".join(str(i + 1) for i in batch.skipped[:20]) + ("…" if len(batch.skipped) > 20 else "")
        st.warning(f"{len(batch.skipped)} line(s) have no words and were skipped: line {numbers}.")
    if not batch.predictions:
        return batch
    table = pd.DataFrame(batch.rows())
    st.dataframe(
        table,
        hide_index=True,
        key="classifier_table",
        column_config={
            "probability": st.column_config.ProgressColumn("probability", min_value=0.0, max_value=1.0, format="%.3f"),
            "text": st.column_config.TextColumn("text", width="large"),
        },
    )
    cut = int(table["truncated"].sum())
    note = f" {cut} line(s) were cut at {batch.max_len} tokens (sidebar: Maximum length)." if cut else ""
    st.caption(f"{len(table):,} sentences; click a column header to sort.{note}")
    st.download_button(
        "Download as CSV",
        table.to_csv(index=False).encode("utf-8"),
        "predictions.csv",
        "text/csv",
        key="classifier_csv",
    )
    return batch


def options_row(label_names: list[str]) -> dict:
    cols = st.columns(4)
    target = cols[0].selectbox("Explain the class", ["predicted"] + label_names, key="classifier_target")
    steps = cols[1].slider("Integrated-gradients steps", 4, 200, 50, key="classifier_steps")
    rule = cols[2].selectbox("Integration rule", RULES, format_func=RULE_NAMES.get, key="classifier_rule")
    baseline = cols[3].selectbox("Baseline", BASELINES, format_func=BASELINE_NAMES.get, key="classifier_baseline")
    return {"target": None if target == "predicted" else target, "steps": steps, "rule": rule, "baseline": baseline}


def attribution_columns(attr) -> None:
    label = attr.target_label
    captions = {
        "rollout": "Attention chained through the layers (residual counted), to the pooled position. "
        "Unsigned: where information was read from.",
        "grad_input": f"Gradient of logit({label}) × token embedding, summed over dimensions. "
        "Blue pushes towards the class, red away.",
        "integrated": f"{attr.ig_steps} steps ({RULE_NAMES[attr.ig_rule]}), baseline {BASELINE_NAMES[attr.ig_baseline]}. "
        f"Sum {attr.integrated.sum():+.4f} vs. logit(input) − logit(baseline) {attr.ig_delta:+.4f}: "
        f"completeness error {attr.ig_error:.2e} ({attr.ig_error / max(abs(attr.ig_delta), 1e-12):.2%}).",
    }
    for col, kind in zip(st.columns(3), ["rollout", "grad_input", "integrated"]):
        with col:
            signed = kind != "rollout"
            scores = getattr(attr, kind)
            st.plotly_chart(figs.token_strip(attr.tokens, scores, KINDS[kind], signed), key=f"classifier_strip_{kind}")
            st.plotly_chart(
                figs.attribution_bars(attr.tokens, scores, f"{KINDS[kind]} per token", signed),
                key=f"classifier_bars_{kind}",
            )
            st.caption(captions[kind])
    if attr.ig_error > 0.01 * abs(attr.ig_delta):
        st.warning(
            "The integrated-gradients completeness error is above 1%: raise the number of steps for a "
            "closer sum (max pooling and ReLU make the path integral bumpy)."
        )


def evidence_box(attr) -> None:
    ev = attention_vs_attribution(attr)
    rho = "undefined (one token, or all scores equal)" if np.isnan(ev.rho) else f"{ev.rho:+.2f}"
    st.info(
        "**Attention is not attribution.** Attention weights say where each position *read* information "
        "from, not whether that information moved the decision. Integrated gradients measures how much each "
        f"token moves logit({md_escape(attr.target_label)}). For this sentence, the rank correlation (Spearman ρ) between "
        f"rollout and |integrated gradients| is **{rho}**; the top tokens of each are below."
    )
    rows = [
        {
            "rank": k + 1,
            "attention rollout (token, position, share)": f"{tok} ({pos}) {val:.3f}",
            "integrated gradients (token, position, score)": f"{t2} ({p2}) {v2:+.3f}",
        }
        for k, ((pos, tok, val), (p2, t2, v2)) in enumerate(zip(ev.top_rollout, ev.top_integrated))
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="classifier_evidence")


def head_grid(num_layers: int, num_heads: int) -> tuple[list[tuple[int, int]], list[int]]:
    """Checkboxes: one per head (ticked = on) and one per layer to switch all its heads off."""
    heads_off, layers_off = [], []
    for layer in range(num_layers):
        cols = st.columns([1.4] + [1] * num_heads)
        if cols[0].checkbox(f"layer {layer + 1} off", key=f"classifier_layer_{layer}"):
            layers_off.append(layer)
        for head in range(num_heads):
            if not cols[head + 1].checkbox(
                f"L{layer + 1} H{head + 1}", value=True, key=f"classifier_head_{layer}_{head}"
            ):
                heads_off.append((layer, head))
    return heads_off, layers_off


def switch_off_section(selection, loaded, attr, text: str) -> None:
    st.subheader("Switch heads off")
    st.caption(
        "Untick a head to remove its output before the layer's output projection, or switch a whole "
        "layer's attention off (it then adds nothing to the residual stream). The model is not changed."
    )
    cfg = loaded.config
    heads_off, layers_off = head_grid(cfg.num_layers, cfg.num_heads)
    _, ids = memo(("ids", selection, text), lambda: sentence_ids(loaded, text, selection.max_len))
    mask = head_mask(cfg.num_layers, cfg.num_heads, heads_off, layers_off)
    after = masked_probabilities(loaded.model, ids, mask)[0]
    before, label = attr.probabilities, attr.target_label
    left, right = st.columns([1, 2])
    left.metric(f"p({label}), all heads on", f"{before[attr.target]:.4f}")
    left.metric(
        f"p({label}) with {len(heads_off)} head(s) and {len(layers_off)} layer(s) off",
        f"{after[attr.target]:.4f}",
        delta=f"{after[attr.target] - before[attr.target]:+.4f}",
    )
    right.plotly_chart(figs.probability_before_after(attr.label_names, before, after), key="classifier_before_after")
    wanted = ("effects", selection, text, attr.target)
    # a callback, not the button's return value: the request survives any rerun before this line
    st.button(
        "Find the heads that matter most for this sentence",
        key="classifier_rank",
        on_click=st.session_state.__setitem__,
        args=(RANK_KEY, wanted),
    )
    if st.session_state.get(RANK_KEY) == wanted:
        show_effects(memo(wanted, lambda: head_effects(loaded.model, ids, attr.target)), label)


def show_effects(effects, label: str) -> None:
    ranking = effects.ranking(label)
    left, right = st.columns(2)
    left.plotly_chart(
        figs.head_effect_heatmap(effects.heads, effects.layers, effects.base, label), key="classifier_effects_map"
    )
    right.plotly_chart(
        figs.ranking_bars([r["switched off"] for r in ranking], np.array([r["change"] for r in ranking]), label),
        key="classifier_effects_bars",
    )
    st.dataframe(pd.DataFrame(ranking), hide_index=True, key="classifier_effects_table")


def comparison_section(selection, loaded, options: dict) -> None:
    st.subheader("Compare two sentences")
    cols = st.columns([2, 2, 1])
    text_a = cols[0].text_input("First sentence", "The movie was good.", key="classifier_cmp_a", max_chars=2000)
    text_b = cols[1].text_input("Second sentence", "The movie was not good.", key="classifier_cmp_b", max_chars=2000)
    kind = cols[2].selectbox("Attribution", list(KINDS), format_func=KINDS.get, key="classifier_cmp_kind")
    try:
        comp = memo(
            ("compare", selection, text_a, text_b, tuple(options.items())),
            lambda: compare(loaded, text_a, text_b, max_len=selection.max_len, **options),
        )
    except ValueError as err:
        st.warning(f"Type two sentences to compare: {err}")
        return
    metrics = st.columns(2)
    for col, name, attr in zip(metrics, ("First", "Second"), (comp.a, comp.b)):
        col.metric(
            f"{name}: p({comp.a.target_label})",
            f"{attr.probabilities[attr.target]:.4f}",
            help=f"Predicted: {attr.label_names[attr.predicted]}",
        )
    tokens_a, tokens_b, scores_a, scores_b = comp.aligned(kind)
    title = f"{KINDS[kind]} for {comp.a.target_label}, tokens aligned"
    st.plotly_chart(
        figs.comparison_strips(tokens_a, tokens_b, scores_a, scores_b, title, ("1st", "2nd")), key="classifier_compare"
    )
    st.caption(
        "Both sentences are explained for the same class, so a colour means the same in both rows. Tokens are "
        "aligned by a word diff (not by position): shared words sit in one column, a word only one sentence "
        "has (like “not”) faces an empty cell."
    )


st.title("Classifier")
st.caption(
    "Predictions for many sentences, which tokens drove one of them, and what switching attention heads off does."
)
selection = current_selection()
loaded = get_model(selection)
if loaded.config.kind != "classifier":
    st.info("This page needs a classifier; the selected model is an encoder-decoder. Choose another in the sidebar.")
    st.stop()

lines = input_lines()
if not lines:
    st.info("Type at least one sentence (one per line) or upload a .txt file.")
    st.stop()
batch = batch_table(selection, loaded, lines)
if not batch.predictions:
    st.stop()


def explain_sentence(selection, loaded, text: str, options: dict) -> None:
    """Attributions, the attention-vs-attribution evidence and head switch-off for one sentence."""
    try:
        attr = memo(
            ("attr", selection, text, tuple(options.items())),
            lambda: attribute(loaded, text, max_len=selection.max_len, **options),
        )
    except ValueError as err:
        st.error(f"Could not explain this sentence: {err}")
        return
    predicted = md_escape(attr.label_names[attr.predicted])
    st.markdown(
        f"Prediction: **{predicted}** ({attr.probabilities.max():.3f}); explaining **{md_escape(attr.target_label)}**; "
        f"{len(attr.tokens)} tokens" + (" (cut)." if attr.truncated else ".")
    )
    attribution_columns(attr)
    evidence_box(attr)
    switch_off_section(selection, loaded, attr, text)


st.subheader("Which tokens drove the prediction?")
# index into all lines, as on the other pages, so the chosen sentence is the same one everywhere
index = chosen_sentence(lines)
options = options_row(list(loaded.config.label_names))
if index in batch.skipped:
    st.warning(f"Line {index + 1} has no words to explain: choose another sentence.")
else:
    explain_sentence(selection, loaded, lines[index], options)
comparison_section(selection, loaded, options)
