"""The Residual page's two views that need no chosen text: a layer's heads across many sentences (queries
and keys in one picture) and two models side by side; the page's shared choices (the sidebar's device,
the options' texts)."""

from __future__ import annotations

import time

import numpy as np
import streamlit as st

from transformer.translation import get_task

from . import residual as rs
from . import session
from .charts import show
from .echo import cut_to_limit
from .figure_cache import shared_figures
from .figures import residual as residual_figures
from .figures.attention import head_grid
from .figures.common import escape
from .i18n import current_lang, t, translate
from .markdown import md_escape, token_chips
from .translation_models import TRANSLATION_MODELS

figs = shared_figures(residual_figures)  # figures built once for every session with the same inputs
COMPARE_TEXT = session.value("rs_compare_text")
MAX_CHARS = 4000  # the text boxes: a longer text is cut with a message


OPTION_TEXT = {
    "view": {"lens": "residual.view_lens", "contributions": "residual.view_contributions",
       "heads": "residual.view_heads", "compare": "residual.view_compare"},
    "mode": {"direct": "residual.mode_direct", "ablation": "residual.mode_ablation"},
    "source": {"examples": "residual.source_examples", "pasted": "residual.source_pasted"},
    "colour": {"head": "residual.colour_head", "kind": "residual.colour_kind"},
}  # fmt: skip
KIND_TEXT = {"word": "residual.kind_word", "punctuation": "residual.kind_punctuation",
             "number": "residual.kind_number", "special": "residual.kind_special"}  # fmt: skip


def option_text(widget: str):
    """A widget's ``format_func``: option -> its text in this run's language (the language is read now,
    not when the function is called, so the labels are the same wherever it is called)."""
    lang, keys = current_lang(), OPTION_TEXT[widget]
    return lambda option: translate(keys[option], lang)


def device() -> str:
    """The sidebar's device (the CPU before the sidebar has chosen one)."""
    selection = session.selection()
    return selection.device if selection is not None else "cpu"


def heads_view(name: str, kind: str, lang: str) -> None:
    loaded = rs.load(name, kind, device())
    layers = loaded.config.num_layers
    c1, c2, c3 = st.columns([1, 2, 2])
    layer = c1.selectbox(t("residual.layer"), list(range(1, layers + 1)), key="rs_layer", bind="query-params")
    source = c2.segmented_control(t("residual.sentences"), ("examples", "pasted"), key="rs_source", default="examples",
                                  format_func=option_text("source")) or "examples"  # fmt: skip
    colour = c3.segmented_control(t("residual.colour_by"), ("head", "kind"), key="rs_colour", default="head",
                                  format_func=option_text("colour")) or "head"  # fmt: skip
    texts = example_sentences(name, kind) if source == "examples" else pasted_sentences()
    start = time.perf_counter()
    view = rs.head_space_of(name, kind, device(), texts, layer - 1)
    space = view.space
    role_names = {"query": t("residual.fig_query"), "key": t("residual.fig_key")}
    hover = [
        t("residual.space_hover", sentence=s + 1, token=md_escape(view.tokens[s][p]), position=p, head=h + 1,
          role=role_names[r])
        for s, p, h, r in zip(space.sentence, space.position, space.head, space.role)
    ]  # fmt: skip
    if colour == "head":
        groups, names = space.head, {h: t("residual.head_name", head=h + 1) for h in range(int(space.head.max()) + 1)}
    else:
        groups, names = view.kinds, {k: t(KIND_TEXT[k]) for k in figs.KIND_COLOURS if (view.kinds == k).any()}
    custom = np.stack([space.sentence, space.position, space.head, (space.role == "key").astype(int)], axis=1)
    fig = figs.head_space_scatter(space.xy, groups, space.role, custom, hover, names, space.explained, lang)
    show(fig, filename="head-space", key="rs_space", on_select="rerun", selection_mode="points")
    st.caption(t("residual.space_caption", n=len(view.tokens)))
    st.caption(t("residual.timing", ms=1000 * (time.perf_counter() - start)))
    hit = figs.clicked_cell(session.value("rs_space").get())
    if hit is not None:
        sentence, position, head, _ = hit
        tokens = view.tokens[sentence]
        st.markdown(t("residual.space_clicked", sentence=sentence + 1, token=md_escape(tokens[position]),
                      position=position, head=head + 1) + " " + token_chips(tokens, [False] * len(tokens)))  # fmt: skip
        row = space.attention[sentence][head, position]
        title = t(
            "residual.clicked_head", layer=layer, head=head + 1, token=escape(tokens[position]), position=position
        )
        show(figs.row_bars(row, tokens, title, lang), filename="head-space-row", key="rs_space_row")


def example_sentences(name: str, kind: str) -> tuple[str, ...]:
    if kind == rs.TRANSLATOR and name in TRANSLATION_MODELS:
        return tuple(p.text for p in get_task(TRANSLATION_MODELS[name]).examples()[: rs.MAX_SENTENCES])
    return rs.example_texts(name, kind, device())


def pasted_sentences() -> tuple[str, ...]:
    text = st.text_area(t("residual.pasted"), key="rs_pasted", height=140,
                        help=t("residual.pasted_help", limit=rs.MAX_SENTENCES))  # fmt: skip
    text, cut = cut_to_limit(text, MAX_CHARS)
    if cut:
        st.warning(cut)
    lines = tuple(line.strip() for line in text.splitlines() if line.strip())[: rs.MAX_SENTENCES]
    if not lines:
        st.info(t("residual.empty"))
        st.stop()
    return lines


def compare_view(lang: str) -> None:
    st.caption(t("residual.compare_intro"))
    names = rs.compare_models()
    c1, c2 = st.columns(2)
    left = c1.selectbox(t("residual.model_a"), names, index=0, key="rs_left", bind="query-params")
    right = c2.selectbox(t("residual.model_b"), names, index=min(1, len(names) - 1), key="rs_right",
                         bind="query-params")  # fmt: skip
    if left == right:
        st.info(t("residual.compare_same"))
    if not COMPARE_TEXT.is_set:
        COMPARE_TEXT.set(rs.compare_example(current_lang()))
    text = st.text_area(t("residual.text"), key="rs_compare_text", height=80, bind="query-params")
    text, cut = cut_to_limit(text, MAX_CHARS)
    if cut:
        st.warning(cut)
    if not text.strip():
        st.info(t("residual.empty"))
        st.stop()
    for where, name, side in ((c1, left, "a"), (c2, right, "b")):
        compare_side(where, name, text, side, lang)


def compare_side(where, name: str, text: str, side: str, lang: str) -> None:
    try:
        side_view = rs.side_by_side(name, device(), text)
    except ValueError as err:
        where.warning(t("residual.compare_failed", reason=str(err)))
        return
    where.markdown(f"**{md_escape(name)}**")
    where.markdown(token_chips(side_view.tokens, side_view.unknown, lang=lang))
    if side_view.probabilities is None:
        where.info(t("residual.no_prediction"))
    else:
        fig = figs.prediction_bars(side_view.labels, side_view.probabilities, t("residual.prediction_title"),
                                   f"residual-prediction-{side}", lang)  # fmt: skip
        show(fig, where=where, filename="prediction", key=f"rs_pred_{side}")
    grid = head_grid(side_view.attention, title=t("residual.grid_title"), meta=f"residual-grid-{side}", lang=lang)
    show(grid, where=where, filename="attention-grid", key=f"rs_grid_{side}")
