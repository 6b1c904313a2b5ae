"""Playground: type sentences, run the model, see each prediction and the tokens the model saw.

Classifiers run through batch prediction (no attention kept, length-sorted batches of bounded
size); other models through the full analysis, for their tokens."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from pandas.io.formats.style import Styler

from transformer.core.decoder import KIND as LANGUAGE_MODEL
from transformer.text.calibration import softmax
from transformer.text.cuts import has_hangul, three_cuts
from transformer.text.predict import BatchPrediction, Prediction
from ui.charts import show
from ui.compute import approx_nbytes, session_store
from ui.figure_cache import shared_figures
from ui.figures import classifier as classifier_figures
from ui.i18n import class_name, current_lang, t
from ui.language import check, languages_of
from ui.language import message as language_message
from ui.language import short as language_short
from ui.language_models import prompt_of, top_next
from ui.markdown import legend, md_escape, token_chips
from ui.model_trust import trust_caption
from ui.models import REQUEST_TOKENS, current_selection, get_model, run_analysis, run_predictions, within_token_budget
from ui.presenter import figure_font_scale
from ui.text import example_menu, expected_label, split_lines, text_box

figs = shared_figures(classifier_figures)  # figures built once for every session with the same inputs

DETAILS_OPEN = 5  # with more sentences than this, each one's details sit in a closed expander
SNIPPET_CHARS = 90
QUOTE_CHARS = 600  # a 10,000-word input is quoted this far; its tokens follow anyway


def shown_probabilities(p: Prediction, temperature: float) -> np.ndarray:
    """The probabilities the page shows: softmax(logits / T) with the model's stored temperature."""
    return softmax(p.logits[None], temperature)[0] if p.logits is not None else p.probabilities


def unreadable(p: Prediction) -> bool:
    """Every token became <unk>: the model cannot read this text."""
    return bool(p.unknown) and all(p.unknown)


def language_problem(p: Prediction):
    """The language check of ``p``'s text when the chosen model's answer says nothing about it, else None."""
    found = check(p.text, languages_of(selection, loaded))
    return None if found.ok else found


def title_word(p: Prediction) -> str:
    """What a result's title says: the class, or why there is none."""
    foreign = language_problem(p)
    if foreign is not None:
        return language_short(foreign)
    return class_name(p.label) if p.finite and not unreadable(p) else t("playground.no_prediction")


def summary_table(batch: BatchPrediction, temperature: float) -> pd.DataFrame:
    """One row per input: text, prediction, its probability (as shown) and the raw one, token counts;
    a text in a language the model does not read says so instead of a prediction."""
    rows = []
    for p in batch.predictions:
        probs = shown_probabilities(p, temperature)
        foreign = language_problem(p)
        readable = p.finite and not unreadable(p) and foreign is None
        rows.append(
            {
                "#": p.index + 1,
                "sentence": p.text if len(p.text) <= SNIPPET_CHARS else p.text[:SNIPPET_CHARS] + "…",
                "prediction": class_name(p.label) if readable else language_short(foreign) if foreign else "—",
                "probability": float(probs.max()) if readable else None,
                "raw": float(p.probabilities[probs.argmax()]) if readable else None,
                "tokens": p.num_tokens,
                "unknown": int(sum(p.unknown)),
                "cut off": p.original_length - p.num_tokens,
            }
        )
    return pd.DataFrame(rows).set_index("#")


NEUTRAL_BAR = "#6b7280"  # the bars measure confidence, not a class: grey, so no colour clashes with the class colours


def coloured_by_class(frame: pd.DataFrame, label_names: list[str]) -> Styler:
    """The table with each prediction written in its class's colour (blue positive, red negative, as
    in the chart beside it).

    Only the coloured cells get an id (``cell_ids=False``): Streamlit writes a display value for every
    cell with one, column by column (~3 ms of the ~9 ms the table costs a run); the others keep their
    own text, which is what the browser shows for text columns and unformatted numbers anyway (the
    formatted ones, percent and progress bars, ignore display values)."""
    colours = figs.class_colours(label_names)
    by_shown_name = {class_name(name): colour for name, colour in colours.items()}

    def style(value: object) -> str:
        colour = by_shown_name.get(value) if isinstance(value, str) else None
        return f"color: {colour}; font-weight: 600" if colour else ""

    return Styler(frame, cell_ids=False).map(style, subset=["prediction"])


def show_table(batch: BatchPrediction, calibrated: bool, temperature: float) -> None:
    small = "small"
    probability = t("playground.col_probability_calibrated" if calibrated else "playground.col_probability_raw")
    frame = summary_table(batch, temperature)
    if not calibrated:  # the raw number is the one shown: no second column
        frame = frame.drop(columns="raw")
    st.dataframe(
        coloured_by_class(frame, batch.label_names),
        width="stretch",
        placeholder="—",  # a missing probability (no answer), not the word "None"
        column_config={
            "sentence": st.column_config.TextColumn(t("playground.col_sentence"), width="medium"),
            "prediction": st.column_config.TextColumn(t("playground.col_prediction"), width=small),
            "probability": st.column_config.ProgressColumn(
                probability, min_value=0.0, max_value=1.0, format="percent", width="medium", color=NEUTRAL_BAR
            ),
            "raw": st.column_config.NumberColumn(t("playground.col_probability_raw"), format="percent", width=small),
            "tokens": st.column_config.NumberColumn(t("playground.col_tokens"), width=small),
            "unknown": st.column_config.NumberColumn(t("playground.col_unknown"), width=small),
            "cut off": st.column_config.NumberColumn(t("playground.col_cut"), width=small),
        },
    )


def warnings_for(p: Prediction, max_len: int) -> None:
    """Say plainly when the model read only part of the input."""
    if p.truncated:
        st.warning(t("playground.truncated", count=f"{p.original_length:,}", kept=f"{p.num_tokens:,}"))


def bars(names: list[str], probs: np.ndarray, calibrated: bool) -> go.Figure:
    """``figs.probability_bars`` built once per inputs in this session, kept in its store of the cached
    service (``show`` re-sizes a figure's fonts in place in presenter mode: the font scale is part of
    the key, and no other session is handed it). Not through ``compute``: a figure from numbers
    already computed needs no analysis slot. Building takes ~0.6 ms of CPU; the copy st.cache_data
    handed out before cost ~3 ms (unpickling re-validates the figure)."""
    lang, probabilities, store = current_lang(), tuple(float(p) for p in probs), session_store()
    key = ("probability-bars", tuple(names), probabilities, calibrated, lang, figure_font_scale())
    figure = store.get(key)
    if figure is None:
        figure = figs.probability_bars(list(names), np.array(probabilities), calibrated, lang)
        store.put(key, figure, approx_nbytes(figure))
    return figure


def prediction_block(p: Prediction, names: list[str], temperature: float, calibrated: bool, headline=st) -> None:
    """The headline prediction (in ``headline``) and one bar per class; none for text the model cannot read."""
    if not p.finite:
        st.error(t("playground.nonfinite"))
        return
    probs = shown_probabilities(p, temperature)
    if (foreign := language_problem(p)) is not None:  # before <unk>: the more specific reason
        st.warning(language_message(foreign))
        with st.expander(t("language.numbers")):
            show(bars(names, probs, calibrated), key=f"playground_bars_lang_{p.index}")
        return
    if unreadable(p):
        st.warning(t("playground.unreadable"))
        with st.expander(t("playground.unreadable_numbers")):
            show(bars(names, probs, calibrated), key=f"playground_bars_unk_{p.index}")
        return
    headline.metric(t("playground.prediction"), class_name(p.label), help=t("playground.prediction_help"))
    show(bars(names, probs, calibrated), key=f"playground_bars_{p.index}")
    expected = expected_label(p.text)
    if expected is not None and expected != p.label:
        st.warning(t("playground.misread", expected=expected, label=p.label))
        st.page_link("pages/classifier.py", label=t("playground.see_why"), icon=":material/arrow_forward:")


def input_details(p: Prediction, names: list[str], temperature: float, calibrated: bool, max_len: int) -> None:
    """The sentence, its prediction, and its tokens as chips (user text always escaped)."""
    left, right = st.columns([3, 2])
    headline = left.container()  # the class above the sentence, so that the chart starts at the top on the right
    with left:
        more = ""
        if len(p.text) > QUOTE_CHARS:
            more = " " + t("playground.more_chars", count=f"{len(p.text) - QUOTE_CHARS:,}")
        st.markdown(f"> {md_escape(p.text[:QUOTE_CHARS])}{more}")
        cut = p.original_length - p.num_tokens
        st.markdown(token_chips(list(p.tokens), list(p.unknown), cut, lang=current_lang()))
        warnings_for(p, max_len)
    with right:
        prediction_block(p, names, temperature, calibrated, headline)


def calibration_caption(temperature: float) -> str:
    if temperature != 1.0:
        return t("playground.calibrated", t=f"{temperature:.2f}")
    return t("playground.not_calibrated")


def token_preview(selection, lines: list[str]) -> None:
    """Models without a classifier head (e.g. encoder-decoders): the tokens they saw."""
    try:
        result = run_analysis(selection, lines)
    except ValueError as err:
        st.error(t("playground.cannot_run", error=md_escape(str(err))))
        st.stop()
    st.caption(t("playground.no_head"))
    for i, text in enumerate(result.texts):
        st.markdown(f"> {md_escape(text[:QUOTE_CHARS])}")
        cut = result.original_lengths[i] - len(result.tokens[i])
        st.markdown(token_chips(result.tokens[i], result.unknown[i], cut, lang=current_lang()))


NEXT_SHOWN = 5  # next tokens listed per line for a language model


def next_tokens(selection, lines: list[str]) -> None:
    """A language model (an imported GPT-2) has no class head: per line, the tokens it reads and its
    NEXT_SHOWN most likely next tokens with their probabilities."""
    name, device = selection.model_key, selection.device
    st.caption(t("playground.next_intro", k=NEXT_SHOWN))
    if len(lines) > DETAILS_OPEN:
        st.info(t("playground.next_first", shown=DETAILS_OPEN, count=len(lines)))
    context = get_model(selection).config.max_len
    for i, line in enumerate(lines[:DETAILS_OPEN]):
        st.markdown(f"> {md_escape(line[:QUOTE_CHARS])}")
        prompt = prompt_of(name, device, line)
        st.markdown(token_chips(prompt.tokens, [False] * len(prompt.tokens), lang=current_lang()))
        if not prompt.ids or len(prompt.ids) > context:
            st.warning(t("playground.next_too_long", n=len(prompt.ids), most=context))
            continue
        tops = top_next(name, device, tuple(prompt.ids), NEXT_SHOWN)
        frame = pd.DataFrame({"token": [token for token, _ in tops], "probability": [p for _, p in tops]})
        st.dataframe(frame, hide_index=True, key=f"playground_next_{i}", column_config={
            "token": st.column_config.TextColumn(t("playground.col_next_token")),
            "probability": st.column_config.ProgressColumn(
                t("playground.col_next_probability"), min_value=0.0, max_value=1.0, format="percent", color=NEUTRAL_BAR
            ),
        })  # fmt: skip


CUT_TITLES = {
    "pieces": lambda: t("playground.cut_pieces"),
    "morphemes": lambda: t("playground.cut_morphemes"),
    "syllables": lambda: t("playground.cut_syllables"),
}


def token_cuts(loaded, line: str) -> None:
    """One Korean sentence cut three ways side by side: the model's pieces, morphemes, syllables."""
    with st.expander(t("playground.cuts_title"), expanded=loaded.config.tokenizer == "wordpiece"):
        st.caption(t("playground.cuts_intro"))
        st.markdown(f"> {md_escape(line[:QUOTE_CHARS])}")
        columns = st.columns(3)
        for column, cut in zip(columns, three_cuts(line[:QUOTE_CHARS], loaded)):
            with column:
                st.markdown(f"**{CUT_TITLES[cut.name]()}**")
                if not cut.available:
                    st.info(t("playground.cut_missing"))
                    continue
                st.caption(t("playground.cut_count", count=len(cut.tokens), unknown=sum(cut.unknown)))
                st.markdown(token_chips(list(cut.tokens), list(cut.unknown), lang=current_lang()))
        st.caption(t("playground.cuts_help"))


def predictions_or_stop(selection, lines: list[str]) -> tuple[BatchPrediction, float]:
    """Predictions of the lines that fit one request (saying what was left out), or a message and a stop."""
    kept, total = within_token_budget(selection, lines)  # tokenised once: the predictions run these ids
    if len(kept.texts) < len(lines):
        st.warning(
            t(
                "playground.token_budget",
                kept=len(kept.texts),
                count=len(lines),
                total=f"{total:,}",
                budget=f"{REQUEST_TOKENS:,}",
            )
        )
    try:
        return run_predictions(selection, kept)
    except ValueError as err:
        st.error(t("playground.cannot_run", error=md_escape(str(err))))
        st.stop()


def show_results(batch: BatchPrediction, ms: float, temperature: float, max_len: int) -> None:
    calibrated = temperature != 1.0
    n = len(batch.predictions)
    device = selection.device.upper()
    trust_caption(get_model(selection).metrics)
    if batch.skipped:
        st.info(t("playground.skipped", lines=", ".join(str(i + 1) for i in batch.skipped)))
    if any(not p.finite for p in batch.predictions):
        st.error(t("playground.nonfinite"))
    show_table(batch, calibrated, temperature)
    for p in batch.predictions:
        title = f"{p.index + 1}. {md_escape(title_word(p))}"
        if n <= DETAILS_OPEN:
            st.subheader(title, divider="gray")
            input_details(p, batch.label_names, temperature, calibrated, max_len)
        else:
            with st.expander(title, expanded=p is batch.predictions[0]):
                input_details(p, batch.label_names, temperature, calibrated, max_len)
    # after the results, not above them: the first result's chart starts on the first screen
    st.markdown(legend(current_lang()))
    st.caption(t("playground.timing", device=device, ms=f"{ms:,.0f}", count=n) + " " + calibration_caption(temperature))


st.title(t("playground.title"), help=t("playground.intro"))  # the help, not a line: the chart fits the first screen
selection = current_selection()
loaded = get_model(selection)
box, side = st.columns([5, 1], vertical_alignment="bottom")  # the examples and Run beside the box
with box:
    lines = split_lines(text_box(show_examples=False))
with side:
    example_menu()
    st.button(t("playground.run"), type="primary", help=t("playground.run_help"), width="stretch")
if not lines:
    st.info(t("playground.empty"))
    st.stop()
if loaded.config.kind == LANGUAGE_MODEL and loaded.lm_tokenizer is not None:
    next_tokens(selection, lines)
    st.stop()
if loaded.config.kind != "classifier" or not loaded.config.has_head:
    token_preview(selection, lines)
    st.stop()
batch, ms = predictions_or_stop(selection, lines)
show_results(batch, ms, float(loaded.config.temperature), selection.max_len)
if has_hangul(lines[0]):
    token_cuts(loaded, lines[0])
