"""Classifier: predictions for many sentences, which tokens drove one of them, what happens when
attention heads are switched off, and how far the probabilities can be trusted. Computations live
in ``transformer`` (predict, attribution, ablation, calibration); figures in ``ui.figures.classifier``."""

from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from transformer.text.attribution import BASELINES, RULES, attention_vs_attribution
from transformer.text.calibration import rescale
from transformer.text.predict import MAX_FILE_BYTES, MAX_FILE_LINES, predict_batch, read_lines
from ui import classifier as view
from ui import classifier_runs as runs
from ui.charts import show
from ui.classroom.ask import ask_classifier
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

RANK_KEY = "classifier_rank_request"  # the sentence whose head ranking was asked for
PROGRESS_FROM = 65  # lines; shorter batches finish before a bar would be seen
KINDS = view.KINDS
STRIP_CHARS = 80  # characters per line of a token strip drawn across the page's width
COMPARE_CHARS = 2_000  # characters of each compared sentence


def kind_name(kind: str) -> str:
    return view.kind_name(kind, current_lang())


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

    batch = runs.batch(selection, lines, run)
    if batch.skipped:
        numbers = view.line_list([i + 1 for i in batch.skipped])
        st.warning(t("classifier.skipped", count=len(batch.skipped), lines=numbers))
    if not batch.predictions:
        return batch
    if any(not p.finite for p in batch.predictions):
        st.error(t("classifier.nonfinite"))
    temperature = float(loaded.config.temperature)
    # the table's probabilities are the calibrated ones, and say so (the model's own beside them)
    raw = np.stack([p.probabilities for p in batch.predictions])
    table = view.prediction_table(batch.rows(), raw, batch.label_names, temperature, current_lang())
    flag_foreign(table, languages_of(selection, loaded))
    columns = view.table_columns(temperature != 1.0, current_lang())  # a missing probability: "—", not "None"
    st.dataframe(table, hide_index=True, key="classifier_table", placeholder="—", column_config=columns)
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
    lines = view.line_list([line for line, _ in bad])
    st.warning(t("language.lines", lines=lines, why=", ".join(dict.fromkeys(language_short(f) for _, f in bad))))


def options_row(label_names: list[str], specials: dict[str, str]) -> dict:
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
        format_func=partial(view.baseline_name, lang=current_lang(), **specials),  # also outside the run (AppTest)
        key="classifier_baseline",
    )
    return {"target": target, "steps": steps, "rule": rule, "baseline": baseline, "score": "log-odds"}


def attribution_tabs(attr, specials: dict[str, str]) -> None:
    """The three attributions in tabs, each drawn across the page's width (chips never overlap)."""
    lang = current_lang()
    st.markdown(view.colour_legend(attr, lang))
    captions = view.attribution_captions(attr, lang, **specials)
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
    temperature = float(cfg.temperature)
    after = rescale(runs.switched_off(selection, loaded, text, attr, heads_off, layers_off), temperature)
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
        effects = runs.head_effects_of(selection, loaded, text, attr.target)
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
    first, second = view.COMPARE_DEFAULTS["ko" if reads_korean(loaded.vocab) else "en"]
    text_a = compared_text(cols[0], t("classifier.first"), first, "classifier_cmp_a")
    text_b = compared_text(cols[1], t("classifier.second"), second, "classifier_cmp_b")
    kind = cols[2].selectbox(t("classifier.attribution"), list(KINDS), format_func=partial(view.kind_name, lang=current_lang()),
                             key="classifier_cmp_kind")  # fmt: skip
    longest = max(runs.token_count(selection, loaded, text) for text in (text_a, text_b))
    options = {**options, "steps": view.ig_steps(longest, options["steps"])}  # a long pair: fewer steps
    try:
        comp = runs.comparison(selection, loaded, text_a, text_b, options)
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
    result, _ = runs.sentence(selection, loaded, text)
    found = check(text, languages_of(selection, loaded))
    if not found.ok:  # before <unk>: the more specific reason
        st.warning(language_message(found))
        return True
    if all(result.unknown[0]):
        st.warning(t("classifier.unreadable"))
        return True
    predicted = attr.label_names[attr.predicted]
    st.markdown(view.prediction_line(attr, float(loaded.config.temperature), current_lang()))
    trust_caption(loaded.metrics)
    expected = expected_label(text)
    if expected is not None and expected != predicted:
        st.warning(t("classifier.misread", expected=class_name(expected), label=class_name(predicted)))
    return True


def explain_sentence(selection, loaded, text: str, options: dict):
    """The prediction and attributions of one sentence; returns them (None when there are none). A long
    text gets fewer integration steps (``ui.classifier.ig_steps``), and the page says so."""
    asked, tokens = options["steps"], runs.token_count(selection, loaded, text)
    options = {**options, "steps": view.ig_steps(tokens, asked)}
    try:
        attr = runs.attribution(selection, loaded, text, options)
    except ValueError as err:
        st.error(t("classifier.explain_error", error=md_escape(str(err))))
        return None
    if not headline(loaded, attr, text):
        return None
    if options["steps"] < asked:
        st.caption(t("classifier.fewer_steps", steps=options["steps"], asked=asked, tokens=f"{tokens:,}"))
    attribution_tabs(attr, view.special_tokens(loaded.vocab, loaded.config.pad_id))
    return attr


def calibration_section(selection, loaded) -> None:
    """The reliability diagram of a bundled model calibrated on its validation split."""
    st.subheader(t("classifier.calibration_title"))
    info = None if selection.is_upload else view.calibration_info(MODELS_DIR / selection.model_key)
    if info is None:  # a folder's metrics.json without the measurements
        st.caption(t("classifier.not_calibrated"))
        return
    lang = current_lang()
    for caption in view.calibration_captions(info, fitted_text(info["fitted_on"]), lang):
        st.caption(caption)  # better, the same or worse: as the numbers shown say
    sets = view.reliability_sets(info)  # long reviews; and short sentences when fitted on a mix
    for column, (suffix, title) in zip(st.columns(len(sets)), sets):
        if len(sets) > 1:
            column.markdown(f"**{t(title)}**")
        before, after = info["reliability_before" + suffix], info["reliability_after" + suffix]
        fig = figs.reliability_diagram(before, after, info["temperature"], lang)
        show(where=column, fig=fig, key="classifier_reliability" + suffix)


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
            specials = view.special_tokens(loaded.vocab, loaded.config.pad_id)  # [UNK] / <unk> in the baseline's name
            options = options_row(list(loaded.config.label_names), specials)
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
