"""Inside the residual stream: the logit lens, who wrote the answer (direct contributions, or the
effect of switching a head off), a layer's heads across many sentences, two models side by side."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import streamlit as st

from transformer.residual import BIAS, CROSS_HEAD, EMBEDDING, FFN, HEAD
from transformer.translation import get_task
from ui import residual as rs
from ui import session
from ui.charts import show
from ui.echo import cut_to_limit, echo
from ui.figure_cache import shared_figures
from ui.figures import residual as residual_figures
from ui.figures.common import escape
from ui.i18n import current_lang, t
from ui.language_models import about_short, korean_default_note
from ui.markdown import md_escape, token_chips
from ui.navigation import ensure_shell
from ui.page_style import hide_text_model_picker
from ui.residual_views import compare_view, device, heads_view, option_text
from ui.translation_models import TRANSLATION_MODELS, output_text

figs = shared_figures(residual_figures)  # figures built once for every session with the same inputs

VIEWS = ("lens", "contributions", "heads", "compare")
TEXT, TEXT_FOR = session.value("rs_text"), session.value("rs_text_for")  # the box, and the model it is for
POSITION, POSITION_FOR = session.value("rs_position"), session.value("rs_position_for")  # the ids it is for
HEAD_CHOSEN, COMPARE_TEXT = session.value("rs_head"), session.value("rs_compare_text")
MAX_CHARS = 4000  # the text box: a longer text is cut with a message
LABELLED_POSITIONS = 40  # the lens writes tokens in its cells up to this many positions
KIND_NAMES = {rs.LM: "residual.kind_lm", rs.MLM: "residual.kind_mlm", rs.TRANSLATOR: "residual.kind_translator"}


def from_address(key: str, options) -> None:
    """A link's choice (``?rs_view=heads``, the option itself, whatever the language) for the choice
    widget ``key``, taken once per new link: afterwards the user's clicks win. (A widget bound to the
    address would write its label there, which changes with the language.)"""
    linked, seen = st.query_params.get(key), session.value(f"{key}_linked")
    if linked in options and linked != seen.get():
        seen.set(linked)
        session.value(key).set(linked)


def to_address(key: str, value: str) -> None:
    """Write the choice to the address (so a shared link opens it), noted as already taken."""
    st.query_params[key] = value
    session.value(f"{key}_linked").set(value)


def choose_model() -> tuple[str, str]:
    models = rs.vocabulary_models()
    if not models:
        st.info(t("residual.no_models"))
        st.stop()
    names = list(models)
    # no format_func: the address keeps the option's label, which must not change with the language
    name = st.selectbox(t("residual.model"), names, key="rs_model", help=t("residual.model_help"), bind="query-params")
    hide_text_model_picker()
    return name, models[name]


def model_caption(name: str, kind: str) -> None:
    """What a language model is, in one line (SmolLM2: pretrained by others, English only; review-lm:
    trained here from nothing), and in Korean why the page starts on review-lm."""
    if kind != rs.LM:
        st.caption(t(KIND_NAMES[kind]))
        return
    st.caption(about_short(name, rs.load(name, kind, device()), session.is_upload(name)))
    if note := korean_default_note(name):
        st.caption(note)


def default_text(name: str, kind: str) -> str:
    if kind == rs.TRANSLATOR and name in TRANSLATION_MODELS:
        return get_task(TRANSLATION_MODELS[name]).examples()[0].text
    return rs.example_text(name, kind, device(), current_lang())


def choose_text(name: str, kind: str) -> str:
    """The text box: a model's own example when the page opens on it with no text (or a link's
    text), and whenever another model is chosen."""
    key, shown_for = TEXT.key, TEXT_FOR.get()
    if (shown_for is None and not TEXT.get()) or shown_for not in (None, name):
        TEXT.set(default_text(name, kind))
    TEXT_FOR.set(name)
    text = st.text_area(t("residual.text"), key=key, height=68, help=t("residual.text_help"),
                        bind="query-params")  # fmt: skip
    text, cut = cut_to_limit(text, MAX_CHARS)
    if cut:
        st.warning(cut)
    if not text.strip():
        st.info(t("residual.empty"))
        st.stop()
    return text


def show_reading(name: str, kind: str, reading: rs.Reading, chips: bool = True) -> None:
    """What the model reads (a translator: also what it wrote); ``chips``: the tokens as chips (the lens
    leaves them out: its axis shows them, and its figure then starts on the first screen)."""
    if reading.cut:
        st.caption(t("residual.too_long", limit=len(reading.ids)))
    if kind == rs.TRANSLATOR:
        st.markdown(t("residual.reads") + " " + token_chips(reading.source, [False] * len(reading.source)))
        loaded = rs.load(name, kind, device())
        st.markdown(t("residual.translation", text=md_escape(output_text(loaded, list(reading.target[1:])))))
    elif chips:
        st.markdown(t("residual.reads") + " " + token_chips(reading.tokens, [False] * len(reading.tokens)))


def choose_position(reading: rs.Reading) -> int:
    """The position read; a new input starts on its own (the blank, the last token, the first step)."""
    options = list(range(len(reading.tokens)))
    if POSITION_FOR.get() != reading.ids or POSITION.get() not in options:
        POSITION_FOR.set(reading.ids)
        POSITION.set(reading.start)
    return st.selectbox(t("residual.position"), options, key="rs_position", help=t("residual.position_help"),
                        format_func=lambda i: f"{i}: {reading.tokens[i]}")  # fmt: skip


def lens_view(name: str, kind: str, reading: rs.Reading, lang: str) -> None:
    start = time.perf_counter()
    lens = rs.lens_of(name, kind, device(), reading)
    words = _words(name, kind, lens.top_ids)
    positions = rs.position_labels(name, kind, device(), reading)
    show(figs.lens_heatmap(words, lens.top_probs, positions, lang), filename="logit-lens", key="rs_lens")
    st.caption(t("residual.lens_caption"))
    if len(reading.tokens) > LABELLED_POSITIONS:
        st.caption(t("residual.lens_long"))
    position = choose_position(reading)
    answer = rs.token_text(name, kind, device(), int(lens.answer[position]))
    settled, near = (rs.settles_at(lens.answer_rank[:, position], k) for k in (1, 10))
    if settled is not None:
        key = "residual.settles_embedding" if settled == 0 else "residual.settles"
        st.markdown(t(key, token=md_escape(answer), layer=settled, layers=lens.layers, near=near))
    show(figs.answer_curve(lens.answer_prob[:, position], lens.answer_rank[:, position], answer, lang),
         filename="logit-lens-answer", key="rs_answer")  # fmt: skip
    st.caption(t("residual.answer_caption"))
    rows = figs.reading_names(lens.top_ids.shape[0], lang)
    table = pd.DataFrame({
        t("residual.table_reading"): rows,
        t("residual.table_top"): [", ".join(f"{w} {p:.0%}" for w, p in zip(words[r][position], lens.top_probs[r, position]))
                                  for r in range(len(rows))],
        t("residual.table_rank"): lens.answer_rank[:, position] + 1,
    })  # fmt: skip
    st.dataframe(table, hide_index=True)
    st.caption(t("residual.timing", ms=1000 * (time.perf_counter() - start)))


def _words(name: str, kind: str, ids: np.ndarray) -> list:
    """Token texts for an array of ids (R, T, k), each distinct id looked up once."""
    dev = device()
    names = {int(i): rs.token_text(name, kind, dev, int(i)) for i in np.unique(ids)}
    return [[[names[int(i)] for i in cell] for cell in row] for row in ids]


def chosen_token(name: str, kind: str) -> int | None:
    typed = st.text_input(t("residual.token"), key="rs_token", help=t("residual.token_help"))
    if not typed.strip():
        return None
    found = rs.token_id(name, kind, device(), typed.strip())
    if found is None:
        st.warning(t("residual.token_unknown", token=echo(typed.strip())))
    return found


def contributions_view(name: str, kind: str, reading: rs.Reading, lang: str) -> None:
    position = choose_position(reading)
    token = chosen_token(name, kind)
    modes = ("direct", "ablation")
    from_address("rs_mode", modes)
    mode = st.segmented_control(t("residual.mode"), modes, key="rs_mode", default="direct",
                                format_func=option_text("mode")) or "direct"  # fmt: skip
    to_address("rs_mode", mode)
    start = time.perf_counter()
    c = rs.contributions_of(name, kind, device(), reading, position, token)
    word = rs.token_text(name, kind, device(), c.token)
    labels, values = grouped_parts(c)
    show(figs.contribution_waterfall(labels, values, c.logit, word, lang), filename="contributions", key="rs_waterfall")
    caption = "residual.direct_caption_post" if c.post_norm else "residual.direct_caption_pre"
    st.caption(t(caption, token=md_escape(word), total=c.total, logit=c.logit))
    st.markdown(t("residual.writers", token=md_escape(word), parts=", ".join(writer_names(c))))
    limit = rs.ablation_tokens(name, kind, device(), reading, position)
    if mode == "ablation" and limit is not None:
        st.info(t("residual.ablation_too_long", heads=limit[0], limit=limit[1], tokens=limit[2]))
        mode = "direct"
    if mode == "ablation":
        effects = rs.effects_of(name, kind, device(), reading, position, c.token)
        grid, title, value = effects.change, t("residual.heads_ablation"), t("residual.value_ablation")
        st.caption(t("residual.ablation_caption", token=md_escape(word), base=effects.base))
        if effects.cross:
            st.caption(t("residual.ablation_cross"))
    else:
        cross = kind == rs.TRANSLATOR
        grid = c.grid(CROSS_HEAD if cross else HEAD)
        title = t("residual.heads_cross_direct" if cross else "residual.heads_direct")
        value = t("residual.value_direct")
    selected = HEAD_CHOSEN.get()
    fig = figs.head_heatmap(grid, title, value, selected, lang)
    show(fig, filename="contributions-heads", key="rs_heads", on_select=_pick_head, selection_mode="points")
    st.caption(t("residual.click_hint"))
    st.caption(t("residual.timing", ms=1000 * (time.perf_counter() - start)))
    if selected is not None and selected[0] < grid.shape[0] and selected[1] < grid.shape[1]:
        head_row(name, kind, reading, position, selected, mode == "ablation" or kind == rs.TRANSLATOR, lang)


def writer_names(c) -> list[str]:
    """The parts that pushed the token's logit up most, named ("L21 H4 +2.31", "L28 FF +1.90")."""
    names = {HEAD: "residual.writer_head", CROSS_HEAD: "residual.writer_cross", FFN: "residual.writer_ffn",
             EMBEDDING: "residual.writer_embedding", BIAS: "residual.writer_bias"}  # fmt: skip
    return [t(names.get(kind, "residual.writer_bias"), layer=layer + 1, head=head + 1) + f" {value:+.2f}"
            for kind, layer, head, value in rs.top_writers(c)]  # fmt: skip


def _pick_head() -> None:
    hit = figs.clicked_cell(session.value("rs_heads").get())
    if hit is not None:
        HEAD_CHOSEN.set(hit[:2])


def head_row(name, kind, reading, position, selected, cross: bool, lang: str) -> None:
    """The chosen head's attention row from the read position (a translator's cross-attention row when ``cross``)."""
    layer, head = selected
    cross = cross and kind == rs.TRANSLATOR
    rows = rs.attention_rows(name, kind, device(), reading, position, cross)  # (L, H, T_k)
    keys = reading.source if cross else reading.tokens
    title = t(
        "residual.clicked_head",
        layer=layer + 1,
        head=head + 1,
        token=escape(reading.tokens[position]),
        position=position,
    )
    show(figs.row_bars(rows[layer, head, : len(keys)], keys, title, lang), filename="head-row", key="rs_row")


def grouped_parts(c) -> tuple[list[str], np.ndarray]:
    """The waterfall's steps: the embedding, per layer its heads together (and cross heads) and its
    feed-forward block, then the biases."""
    labels, values = [t("residual.part_embedding")], [c.by_kind(EMBEDDING).sum()]
    kinds = np.asarray(c.kinds)
    steps = ((HEAD, "residual.part_heads"), (CROSS_HEAD, "residual.part_cross"), (FFN, "residual.part_ffn"))
    for layer in range(int(c.layers.max()) + 1):
        for kind, key in steps:
            pick = (kinds == kind) & (c.layers == layer)
            if pick.any():
                labels.append(t(key, layer=layer + 1))
                values.append(c.values[pick].sum())
    labels.append(t("residual.part_bias"))
    values.append(c.by_kind(BIAS).sum())
    return labels, np.asarray(values)


def main() -> None:
    ensure_shell()
    lang = current_lang()
    st.title(t("residual.title"), help=t("residual.intro"))  # the help, not a line: the lens starts higher
    left, right = st.columns([7, 3], vertical_alignment="bottom")  # view and model on one row
    from_address("rs_view", VIEWS)
    view = left.segmented_control(t("residual.view"), VIEWS, key="rs_view", default="lens",
                                  format_func=option_text("view")) or "lens"  # fmt: skip
    to_address("rs_view", view)
    if view == "compare":
        compare_view(lang)
        return
    with right:
        name, kind = choose_model()
    model_caption(name, kind)
    if view == "heads":
        heads_view(name, kind, lang)
        return
    text = choose_text(name, kind)
    reading = rs.reading(name, kind, device(), text)
    show_reading(name, kind, reading, chips=view != "lens")
    if view == "lens":
        lens_view(name, kind, reading, lang)
    else:
        contributions_view(name, kind, reading, lang)


main()
