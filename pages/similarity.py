"""Sentence similarity: a sentence encoder's cosine similarities between typed sentences (a matrix),
and for one pair which tokens of one sentence are closest to which of the other."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import streamlit as st

from ui import session
from ui.charts import show
from ui.figure_cache import shared_figures
from ui.figures import similarity as similarity_figures
from ui.i18n import current_lang, t
from ui.language import languages_of, sentences_note
from ui.markdown import md_escape
from ui.models import Selection, get_model
from ui.navigation import ensure_shell
from ui.page_style import hide_text_model_picker
from ui.similarity import (
    EXAMPLES,
    MAX_CHARS,
    MAX_SENTENCES,
    SENTENCE_ENCODER,
    extremes_text,
    is_sentence_encoder,
    recipe_for,
    run_similarity,
    similarity_models,
    split_sentences,
)
from ui.text import cut_text

figs = shared_figures(similarity_figures)  # figures built once for every session with the same inputs

MODEL, TEXT, WORDS = session.value("sim_model"), session.value("sim_text"), session.value("sim_words")


def pair_values(sentences: tuple[str, ...]) -> tuple[session.Value, session.Value]:
    """The two sentence menus, keyed by the sentences they choose from: new sentences get new menus
    (starting on their most alike pair) instead of menus whose labels no longer fit."""
    digest = hashlib.sha1("\n".join(sentences).encode("utf-8")).hexdigest()[:12]
    return session.value(f"sim_a_{digest}"), session.value(f"sim_b_{digest}")


def choose_model() -> str:
    models = similarity_models()
    if not models:
        st.info(t("similarity.no_model"))
        st.stop()
    if MODEL.get() not in models:
        MODEL.set(SENTENCE_ENCODER if SENTENCE_ENCODER in models else models[0])
    name = st.selectbox(t("similarity.model"), models, key=MODEL.key)
    hide_text_model_picker()  # this picker is the page's one model choice
    return name


def about(name: str, device: str):
    """What the chosen model is (and whether it was trained to compare sentences); returns its recipe."""
    recipe = recipe_for(name)
    cfg = get_model(Selection(name, device, 0)).config
    tokens = min(recipe.max_tokens or cfg.max_len, cfg.max_len)
    key = "similarity.about_not_trained"
    if is_sentence_encoder(recipe):
        key = "similarity.about_minilm" if name == SENTENCE_ENCODER else "similarity.about_encoder"
    st.markdown(t(key, name=md_escape(name), layers=cfg.num_layers, heads=cfg.num_heads, width=cfg.d_model,
                  tokens=tokens))  # fmt: skip
    return recipe


def choose_sentences():
    if not TEXT.is_set:
        TEXT.set("\n".join(EXAMPLES))
    # no max_chars: the browser would drop a longer paste in silence; it is cut here, and the page says so
    text = st.text_area(t("similarity.input"), key=TEXT.key, height=170,
                        help=t("similarity.input_help", count=MAX_SENTENCES))  # fmt: skip
    text, cut_from = cut_text(text, MAX_CHARS)
    if cut_from:
        st.warning(t("text.too_long", count=f"{cut_from:,}", limit=f"{MAX_CHARS:,}"))
    sentences = split_sentences(text)
    if sentences.empty:
        st.caption(t("similarity.empty_skipped", count=sentences.empty))
    if len(sentences.kept) < 2:
        st.info(t("similarity.too_few"))
        st.stop()
    if sentences.cut:
        st.warning(t("similarity.too_many", shown=len(sentences.kept), given=sentences.given))
    return sentences.kept


def extremes(similarity: np.ndarray) -> None:
    """The most and the least alike pair, named under the matrix (two sentences: their one pair)."""
    key, fields = extremes_text(similarity)
    st.caption(t(key, **fields))


def choose_pair(result) -> tuple[int, int]:
    """Two sentences (0-based); they start on the most alike pair."""
    n = len(result.texts)
    first, second = pair_values(tuple(result.texts))
    if first.get() not in range(n) or second.get() not in range(n):
        masked = result.similarity - 2 * np.eye(n)  # the diagonal (1) left out
        a, b = np.unravel_index(int(masked.argmax()), masked.shape)
        first.set(int(min(a, b)))
        second.set(int(max(a, b)))
    label = dict(enumerate(figs.sentence_label(i, text, 60) for i, text in enumerate(result.texts)))
    c1, c2 = st.columns(2)
    a = c1.selectbox(t("similarity.sentence_a"), list(range(n)), format_func=label.get, key=first.key)
    b = c2.selectbox(t("similarity.sentence_b"), list(range(n)), format_func=label.get, key=second.key)
    return a, b


def tokens_section(result, lang: str) -> None:
    st.subheader(t("similarity.pair_title"), divider="gray")
    a, b = choose_pair(result)
    if not WORDS.is_set:
        WORDS.set(True)
    words_only = st.toggle(t("similarity.words_only"), key=WORDS.key, help=t("similarity.words_only_help"))
    match = result.token_match(a, b, words_only)
    show(figs.token_heatmap(match.cosine, match.tokens_a, match.tokens_b, match.best_for_a, (a + 1, b + 1), lang),
         filename="similarity-tokens", key="sim_tokens")  # fmt: skip
    st.caption(t("similarity.tokens_caption"))
    rows = {
        t("similarity.col_token"): match.tokens_a,
        t("similarity.col_closest", number=b + 1): [match.tokens_b[j] for j in match.best_for_a],
        t("similarity.col_cosine"): np.round(match.best_for_a_score, 3),
    }
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")


def recipe_note(recipe) -> None:
    names = {"mean": t("similarity.pool_mean"), "cls": t("similarity.pool_cls"), "max": t("similarity.pool_max"),
             "mean_sqrt_len": t("similarity.pool_mean_sqrt_len")}  # fmt: skip
    pooling = names[recipe.pooling]
    normalised = t("similarity.normalised") if recipe.normalize else ""
    if recipe.source:
        files = ", ".join(f"`{name}`" for name in recipe.source)
        st.caption(t("similarity.recipe_folder", files=files, pooling=pooling, normalised=normalised))
    else:
        st.caption(t("similarity.recipe_default", pooling=pooling, normalised=normalised))


def main() -> None:
    ensure_shell()
    lang = current_lang()
    st.title(t("similarity.title"), help=t("similarity.intro"))  # the help, not a line: the matrix on the first screen
    if lang != "en":  # before anything is typed: every encoder here learned English only
        st.info(t("similarity.english_only"), icon=":material/translate:")
    figure, controls = st.columns([2, 1], gap="medium")  # the matrix first; what makes it beside it
    with controls:
        texts = choose_sentences()
        name = choose_model()
        device = getattr(session.selection(), "device", "cpu")
        recipe = about(name, device)
    try:
        result = run_similarity(name, device, tuple(texts))
    except ValueError as err:
        st.error(t("similarity.failed", error=md_escape(str(err))))
        st.stop()
    with figure:
        cut = [str(i + 1) for i, truncated in enumerate(result.truncated) if truncated]
        if cut:
            st.warning(t("similarity.truncated", limit=result.limit, numbers=", ".join(cut)))
        chosen = Selection(name, device, 0)
        if note := sentences_note(result.texts, languages_of(chosen, get_model(chosen))):
            st.warning(note)  # not the model's language: its similarities mean little
        show(figs.similarity_heatmap(result.similarity, result.texts, lang), filename="similarity", key="sim_matrix")
        extremes(result.similarity)
        st.caption(t("similarity.matrix_caption", count=figs.MAX_WRITTEN_SENTENCES))
    with controls:
        recipe_note(recipe)
    tokens_section(result, lang)


main()
