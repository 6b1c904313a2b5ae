"""Classifier: predictions for many sentences, which tokens drove one of them, what happens when
attention heads are switched off, and how far the probabilities can be trusted. Computations live
in ``transformer`` (predict, attribution, ablation, calibration); figures in ``ui.figures.classifier``."""

import json
from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from transformer.analysis.ablation import head_effects, head_mask, masked_probabilities
from transformer.text.attribution import BASELINES, RULES, attention_vs_attribution, attribute, compare, sentence_ids
from transformer.text.calibration import rescale
from transformer.text.predict import MAX_FILE_BYTES, MAX_FILE_LINES, predict_batch, read_lines
from ui import classifier as view
from ui.charts import show
from ui.classroom.ask import ask_classifier
from ui.compute import compute
from ui.figure_cache import shared_figures
from ui.figures import classifier as classifier_figures
from ui.i18n import class_name, class_name_in, current_lang, t
from ui.language import check, languages_of
from ui.language import message as language_message
from ui.language import short as language_short
from ui.markdown import md_escape
from ui.model_about import fitted_text
from ui.model_pages import kind_name as model_kind_name
from ui.model_pages import pages_text
from ui.model_trust import trust_caption
from ui.models import MODELS_DIR, current_selection, get_model
from ui.text import chosen_sentence, cut_text, example_menu, expected_label, reads_korean, split_lines, text_box

figs = shared_figures(classifier_figures)  # figures built once for every session with the same inputs

SIDE_BY_SIDE_HEADS = 6  # the head-effect map beside its bars up to this many heads per layer

# the two sentences compared by default, in the language the model reads (one negation apart)
COMPARE_DEFAULTS = {
    "en": ("The movie was good.", "The movie was not good."),
    "ko": ("영화가 재미있었다.", "영화가 재미없었다."),
}
RANK_KEY = "classifier_rank_request"  # the sentence whose head ranking was asked for
PROGRESS_FROM = 65  # lines; shorter batches finish before a bar would be seen
KINDS = ("integrated", "grad_input", "rollout")
STRIP_CHARS = 80  # characters per line of a token strip drawn across the page's width
COMPARE_CHARS = 2_000  # characters of each compared sentence


def kind_name(kind: str) -> str:
    return view.kind_name(kind, current_lang())


def baseline_name(baseline: str) -> str:
    return view.baseline_name(baseline, current_lang())


def cached(kind: str, selection, key: tuple, fn):
    """``fn()`` from the cached service (``ui.compute``), by the model, device, length limit and ``key``:
    reruns caused by other widgets cost nothing, and each run holds an analysis slot."""
    return compute(kind, (selection.device, selection.max_len, *key), fn, model=selection.model_key)


def input_lines() -> list[str]:
    """Lines of the uploaded file when there is one, else of the shared text box."""
    box, side = st.columns([3, 1], vertical_alignment="bottom")  # the examples and the file beside the box
    with box:
        text = text_box(show_examples=False)
    with side:
        example_menu()
    with side.expander(t("classifier.upload_title")):
        upload = st.file_uploader(
            t("classifier.upload_label", lines=f"{MAX_FILE_LINES:,}", mb=MAX_FILE_BYTES // 1_000_000),
            type=["txt"],
            key="classifier_file",
        )
    if upload is None:
        return split_lines(text)
    try:
        lines, blank = read_lines(upload.getvalue())
    except ValueError as err:
        st.error(f"{md_escape(upload.name)}: {err}")
        return []
    st.caption(t("classifier.upload_used", count=f"{len(lines):,}", name=md_escape(upload.name), blank=blank))
    return lines


def batch_table(selection, loaded, lines: list[str]):
    st.subheader(t("classifier.predictions"))

    def run():
        bar = st.progress(0.0, text=t("classifier.predicting")) if len(lines) >= PROGRESS_FROM else None
        update = None if bar is None else (lambda done, total: bar.progress(done / total, text=f"{done:,} / {total:,}"))
        result = predict_batch(loaded, lines, selection.max_len, progress=update)
        if bar is not None:
            bar.empty()
        return result

    batch = cached("predict-batch", selection, tuple(lines), run)
    if batch.skipped:
        numbers = ", ".join(str(i + 1) for i in batch.skipped[:20]) + ("…" if len(batch.skipped) > 20 else "")
        st.warning(t("classifier.skipped", count=len(batch.skipped), lines=numbers))
    if not batch.predictions:
        return batch
    if any(not p.finite for p in batch.predictions):
        st.error(t("classifier.nonfinite"))
    temperature = float(loaded.config.temperature)
    # the table's probabilities are the calibrated ones, and say so (the model's own beside them)
    raw = np.stack([p.probabilities for p in batch.predictions])
    table = view.prediction_table(batch.rows(), raw, batch.label_names, temperature)
    table["label"] = [class_name(v) if isinstance(v, str) else v for v in table["label"]]
    flag_foreign(table, languages_of(selection, loaded))
    table = table.rename(columns={f"p({name})": f"p({class_name(name)})" for name in batch.label_names})
    probability = t("classifier.col_probability_calibrated" if temperature != 1.0 else "classifier.col_probability_raw")
    st.dataframe(
        table,
        hide_index=True,
        key="classifier_table",
        placeholder="—",  # a missing probability, not the word "None"
        column_config={
            "probability": st.column_config.ProgressColumn(probability, min_value=0.0, max_value=1.0, format="%.3f"),
            "raw probability": st.column_config.NumberColumn(t("classifier.col_probability_raw"), format="%.3f"),
            "text": st.column_config.TextColumn(t("classifier.col_text"), width="medium"),
            "line": st.column_config.NumberColumn(t("classifier.col_line")),
            "label": st.column_config.TextColumn(t("classifier.col_label")),
            "tokens": st.column_config.NumberColumn(t("classifier.col_tokens")),
            "truncated": st.column_config.CheckboxColumn(t("classifier.col_truncated")),
        },
    )
    cut = int(table["truncated"].sum())
    note = " " + t("classifier.cut_note", count=cut, max_len=batch.max_len) if cut else ""
    st.caption(view.table_caption(len(table), current_lang()) + note)
    st.download_button(
        t("classifier.download_csv"), table.to_csv(index=False).encode("utf-8"), "predictions.csv", "text/csv"
    )
    return batch


def flag_foreign(table: pd.DataFrame, languages: tuple[str, ...]) -> None:
    """Rows whose text is not in a language the model reads (or has no words): their label says why
    instead of a class, and one warning names their lines."""
    found = [check(text, languages) for text in table["text"]]
    bad = [(line, f) for line, f in zip(table["line"], found) if not f.ok]
    if not bad:
        return
    table["label"] = [label if f.ok else language_short(f) for f, label in zip(found, table["label"])]
    lines = ", ".join(str(line) for line, _ in bad[:20]) + ("…" if len(bad) > 20 else "")
    st.warning(t("language.lines", lines=lines, why=", ".join(dict.fromkeys(language_short(f) for _, f in bad))))


def options_row(label_names: list[str]) -> dict:
    """What to explain: with two classes always the log-odds of the second (blue = towards it)."""
    cols = st.columns(4)
    if len(label_names) == 2:
        target = label_names[1]
        cols[0].markdown(t("classifier.explaining_binary", positive=md_escape(class_name(target))))
    else:
        target = cols[0].selectbox(
            t("classifier.explain_class"),
            label_names,
            format_func=partial(class_name_in, lang=current_lang()),
            key="classifier_target",
        )
    steps = cols[1].slider(t("classifier.steps"), 4, 200, 50, key="classifier_steps")
    rule = cols[2].selectbox(t("classifier.rule"), RULES, key="classifier_rule")
    baseline = cols[3].selectbox(
        t("classifier.baseline"),
        BASELINES,
        index=BASELINES.index("unk"),
        format_func=partial(view.baseline_name, lang=current_lang()),  # the run's language, also for AppTest
        key="classifier_baseline",
    )
    return {"target": target, "steps": steps, "rule": rule, "baseline": baseline, "score": "log-odds"}


def colour_legend(attr) -> str:
    names = attr.label_names
    if len(names) == 2:
        return t(
            "classifier.legend_binary",
            positive=md_escape(class_name(names[1])),
            negative=md_escape(class_name(names[0])),
        )
    return t("classifier.legend_class", label=md_escape(class_name(attr.target_label)))


def integrated_caption(attr) -> str:
    return t(
        "classifier.caption_integrated",
        steps=attr.ig_steps,
        rule=attr.ig_rule,
        baseline=baseline_name(attr.ig_baseline),
        label=md_escape(class_name(attr.target_label)),
        start=f"{attr.ig_start:+.3f}",
        end=f"{attr.ig_end:+.3f}",
        total=f"{attr.integrated.sum():+.3f}",
        error=f"{attr.ig_error:.2e}",
        share=f"{attr.ig_error / max(abs(attr.ig_delta), 1e-12):.2%}",
    )


def attribution_tabs(attr) -> None:
    """The three attributions in tabs, each drawn across the page's width (chips never overlap)."""
    st.markdown(colour_legend(attr))
    captions = {
        "rollout": t("classifier.caption_rollout"),
        "grad_input": t("classifier.caption_grad_input", label=md_escape(class_name(attr.target_label))),
        "integrated": integrated_caption(attr),
    }
    for tab, kind in zip(st.tabs([kind_name(k) for k in KINDS]), KINDS):
        with tab:
            signed, scores = kind != "rollout", getattr(attr, kind)
            strip = figs.token_strip(attr.tokens, scores, kind_name(kind), signed, line_chars=STRIP_CHARS)
            show(strip, key=f"classifier_strip_{kind}")
            st.caption(captions[kind])
            bars = figs.attribution_bars(attr.tokens, scores, t("classifier.per_token", kind=kind_name(kind)), signed)
            show(bars, key=f"classifier_bars_{kind}")
    if attr.ig_error > 0.01 * abs(attr.ig_delta):
        st.warning(t("classifier.ig_error_high"))


def evidence_box(attr) -> None:
    ev = attention_vs_attribution(attr)
    rho = t("classifier.rho_undefined") if np.isnan(ev.rho) else f"{ev.rho:+.2f}"
    st.info(t("classifier.evidence", label=md_escape(class_name(attr.target_label)), rho=rho))
    st.dataframe(pd.DataFrame(view.evidence_rows(ev, current_lang())), hide_index=True, key="classifier_evidence")


def head_grid(num_layers: int, num_heads: int) -> tuple[list[tuple[int, int]], list[int]]:
    """One row of switches per layer, each head named in full ("L3 H7") and the whole layer last; a
    chosen switch is off. Returns (heads off, layers off), 0-based."""
    lang, chosen = current_lang(), {}
    for layer in range(num_layers):
        options = [*range(num_heads), view.WHOLE_LAYER]
        chosen[layer] = st.pills(
            t("classifier.layer_row", layer=layer + 1),
            options,
            selection_mode="multi",
            format_func=lambda head, layer=layer: view.switch_label(layer, head, lang),
            key=f"classifier_off_{layer}",
        )
    return view.switched_off(chosen, num_layers)


def switch_off_section(selection, loaded, attr, text: str) -> None:
    st.subheader(t("classifier.switch_title"))
    st.caption(t("classifier.switch_intro"))
    cfg = loaded.config
    heads_off, layers_off = head_grid(cfg.num_layers, cfg.num_heads)
    _, ids = cached("sentence-ids", selection, (text,), lambda: sentence_ids(loaded, text, selection.max_len))
    mask = head_mask(cfg.num_layers, cfg.num_heads, heads_off, layers_off)
    temperature = float(cfg.temperature)
    switched = (text, tuple(heads_off), tuple(layers_off))
    if heads_off or layers_off:
        switched_off = cached("heads-off", selection, switched, lambda: masked_probabilities(loaded.model, ids, mask))
    else:  # nothing off: the same numbers, not a second pass whose last digit may differ
        switched_off = attr.probabilities[None]
    after = rescale(switched_off[0], temperature)
    before, label = rescale(attr.probabilities, temperature), class_name(attr.target_label)
    left, right = st.columns([1, 2])
    left.metric(t("classifier.p_all_on", label=label), f"{before[attr.target]:.4f}")
    left.metric(
        t("classifier.p_off", label=label, heads=len(heads_off), layers=len(layers_off)),
        f"{after[attr.target]:.4f}",
        delta=f"{after[attr.target] - before[attr.target]:+.4f}",
    )
    fig = figs.probability_before_after(attr.label_names, before, after, current_lang())
    show(where=right, fig=fig, key="classifier_before_after")
    wanted = ("effects", selection, text, attr.target)
    # a callback, not the button's return value: the request survives any rerun before this line
    st.button(
        t("classifier.rank_button"),
        key="classifier_rank",
        on_click=st.session_state.__setitem__,
        args=(RANK_KEY, wanted),
    )
    if st.session_state.get(RANK_KEY) == wanted:
        effects = cached(
            "head-effects", selection, (text, attr.target), lambda: head_effects(loaded.model, ids, attr.target)
        )
        show_effects(view.calibrated_effects(effects, len(attr.label_names), temperature), label)


def show_effects(effects, label: str) -> None:
    lang = current_lang()
    ranking = effects.ranking(label)
    names = [view.effect_name(r["layer"], r["head"], lang) for r in ranking]
    # side by side the map has half the page: enough for a few heads; more get the full width, the bars below it
    left, right = st.columns(2) if effects.heads.shape[1] <= SIDE_BY_SIDE_HEADS else (st.container(), st.container())
    heat = figs.head_effect_heatmap(effects.heads, effects.layers, effects.base, label, lang)
    show(where=left, fig=heat, key="classifier_effects_map")
    changes = np.array([r["change"] for r in ranking])
    bars = figs.ranking_bars(names, changes, label, lang=lang)
    show(where=right, fig=bars, key="classifier_effects_bars")
    st.dataframe(view.effects_table(ranking, label, lang), hide_index=True, key="classifier_effects_table")


def compared_text(column, label: str, default: str, key: str) -> str:
    """One of the two compared sentences: a paste over the limit is cut with the link's message (the
    browser's ``max_chars`` would drop it in silence)."""
    text, given = cut_text(column.text_input(label, default, key=key), COMPARE_CHARS)
    if given:
        column.warning(t("text.too_long", count=f"{given:,}", limit=f"{COMPARE_CHARS:,}"))
    return text


def comparison_section(selection, loaded, options: dict) -> None:
    st.subheader(t("classifier.compare_title"))
    cols = st.columns([2, 2, 1])
    first, second = COMPARE_DEFAULTS["ko" if reads_korean(loaded.vocab) else "en"]
    text_a = compared_text(cols[0], t("classifier.first"), first, "classifier_cmp_a")
    text_b = compared_text(cols[1], t("classifier.second"), second, "classifier_cmp_b")
    kind = cols[2].selectbox(t("classifier.attribution"), list(KINDS), format_func=partial(view.kind_name, lang=current_lang()),
                             key="classifier_cmp_kind")  # fmt: skip
    longest = max(token_count(selection, loaded, text) for text in (text_a, text_b))
    options = {**options, "steps": view.ig_steps(longest, options["steps"])}  # a long pair: fewer steps
    try:
        comp = cached(
            "compare",
            selection,
            (text_a, text_b, tuple(options.items())),
            lambda: compare(loaded, text_a, text_b, max_len=selection.max_len, **options),
        )
    except ValueError as err:
        st.warning(t("classifier.compare_error", error=md_escape(str(err))))
        return
    temperature = float(loaded.config.temperature)
    languages, names = languages_of(selection, loaded), (t("classifier.first"), t("classifier.second"))
    for col, name, attr, text in zip(st.columns(2), names, (comp.a, comp.b), (text_a, text_b)):
        if not (found := check(text, languages)).ok:  # a number, but not an answer about this text
            col.warning(language_message(found))
        col.metric(
            f"{name}: p({class_name(comp.a.target_label)})",
            f"{rescale(attr.probabilities, temperature)[attr.target]:.4f}",
            help=t("classifier.predicted", label=class_name(attr.label_names[attr.predicted])),
        )
    tokens_a, tokens_b, scores_a, scores_b = comp.aligned(kind)
    title = t("classifier.compare_figure", kind=kind_name(kind), label=class_name(comp.a.target_label))
    fig = figs.comparison_strips(tokens_a, tokens_b, scores_a, scores_b, title, names)
    show(fig, key="classifier_compare")
    st.caption(t("classifier.compare_caption"))


def headline(loaded, attr, text: str) -> bool:
    """The prediction for the explained sentence; False (with a message) when there is nothing to explain."""
    if not np.isfinite(attr.probabilities).all():
        st.error(t("classifier.nonfinite"))
        return False
    selection = current_selection()
    result, _ = cached("sentence-ids", selection, (text,), lambda: sentence_ids(loaded, text, selection.max_len))
    found = check(text, languages_of(selection, loaded))
    if not found.ok:  # before <unk>: the more specific reason
        st.warning(language_message(found))
        return True
    if all(result.unknown[0]):
        st.warning(t("classifier.unreadable"))
        return True
    predicted = attr.label_names[attr.predicted]
    p = rescale(attr.probabilities, float(loaded.config.temperature)).max()
    cut = t("classifier.cut") if attr.truncated else ""
    st.markdown(
        t(
            "classifier.prediction_line",
            label=md_escape(class_name(predicted)),
            p=f"{p:.3f}",
            tokens=len(attr.tokens),
            cut=cut,
        )
    )
    trust_caption(loaded.metrics)
    expected = expected_label(text)
    if expected is not None and expected != predicted:
        st.warning(t("classifier.misread", expected=class_name(expected), label=class_name(predicted)))
    return True


def token_count(selection, loaded, text: str) -> int:
    """Tokens the model reads of ``text`` (cut at the sidebar's maximum length)."""
    _, ids = cached("sentence-ids", selection, (text,), lambda: sentence_ids(loaded, text, selection.max_len))
    return int(ids.shape[-1])


def explain_sentence(selection, loaded, text: str, options: dict):
    """The prediction and attributions of one sentence; returns them (None when there are none). A long
    text gets fewer integration steps (``ui.classifier.ig_steps``), and the page says so."""
    asked, tokens = options["steps"], token_count(selection, loaded, text)
    options = {**options, "steps": view.ig_steps(tokens, asked)}
    try:
        attr = cached(
            "attribution",
            selection,
            (text, tuple(options.items())),
            lambda: attribute(loaded, text, max_len=selection.max_len, **options),
        )
    except ValueError as err:
        st.error(t("classifier.explain_error", error=md_escape(str(err))))
        return None
    if not headline(loaded, attr, text):
        return None
    if options["steps"] < asked:
        st.caption(t("classifier.fewer_steps", steps=options["steps"], asked=asked, tokens=f"{tokens:,}"))
    attribution_tabs(attr)
    return attr


def calibration_section(selection, loaded) -> None:
    """The reliability diagram of a bundled model calibrated on its validation split."""
    st.subheader(t("classifier.calibration_title"))
    info = None
    if not selection.is_upload:
        metrics = MODELS_DIR / selection.model_key / "metrics.json"
        info = json.loads(metrics.read_text(encoding="utf-8")).get("calibration") if metrics.is_file() else None
    needed = (
        "temperature",
        "test_ece_before",
        "test_ece_after",
        "fitted_on",
        "reliability_before",
        "reliability_after",
    )
    if not info or any(key not in info for key in needed):  # a folder's metrics.json without the measurements
        st.caption(t("classifier.not_calibrated"))
        return
    key, numbers = view.calibration_wording(info)  # better, the same or worse: as the numbers shown say
    st.caption(t(key, **numbers, fitted=fitted_text(info["fitted_on"])) + " " + t("classifier.calibration_use"))
    sets = [("", "classifier.calibration_long")]
    if "reliability_after_short_sentences" in info:  # fitted on a mix: measured on long reviews and short sentences
        sets.append(("_short_sentences", "classifier.calibration_short"))
        st.caption(
            t(
                "classifier.calibration_short_text",
                before=f"{info['short_sentences_ece_before']:.3f}",
                after=f"{info['short_sentences_ece_after']:.3f}",
            )
        )
    for column, (suffix, title) in zip(st.columns(len(sets)), sets):
        with column:
            if len(sets) > 1:
                st.markdown(f"**{t(title)}**")
            fig = figs.reliability_diagram(
                info["reliability_before" + suffix],
                info["reliability_after" + suffix],
                info["temperature"],
                current_lang(),
            )
            show(fig, key="classifier_reliability" + suffix)


st.title(t("classifier.title"), help=t("classifier.intro"))  # the help, not a line: the figure fits the first screen
selection = current_selection()
loaded = get_model(selection)
if loaded.config.kind != "classifier" or not loaded.config.has_head:  # a masked LM is "classifier" with no head
    st.info(t("classifier.needs_classifier", kind=model_kind_name(loaded), pages=pages_text(loaded)))
    st.stop()

lines = input_lines()
if not lines:
    st.info(t("classifier.empty"))
    st.stop()
# The explained sentence first (its figure on the first screen, its settings right below it), then the
# table of every line's prediction, then what builds on the explanation. The table is computed first:
# it says which lines have no words.
explained, table = st.container(), st.container()
with table:
    batch = batch_table(selection, loaded, lines)
attr = None
if batch.predictions:
    with explained:
        # index into all lines, as on the other pages, so the chosen sentence is the same one everywhere
        index = chosen_sentence(lines)
        figure, settings = st.container(), st.container()
        with settings:
            options = options_row(list(loaded.config.label_names))
        with figure:
            if index in batch.skipped:
                st.warning(t("classifier.no_words", line=index + 1))
            else:
                attr = explain_sentence(selection, loaded, lines[index], options)
    if attr is not None:
        ask_classifier(selection, lines[index])  # a teacher's only
        evidence_box(attr)
        switch_off_section(selection, loaded, attr, lines[index])
    comparison_section(selection, loaded, options)
calibration_section(selection, loaded)
