"""Fill in the blank: a masked language model (the bundled one trained here for each language, or an imported
BERT/RoBERTa/DistilBERT/ELECTRA ``*ForMaskedLM``) guesses the word at each [MASK] (or <mask>), and shows which
heads looked where; or the real English decoder (SmolLM2) fills one blank the way a decoder can (its next
tokens at the blank, each whole sentence scored)."""

from __future__ import annotations

import streamlit as st

from ui import session
from ui.charts import show
from ui.figure_cache import shared_figures
from ui.figures import fill_mask as fill_mask_figures
from ui.fill_mask import (
    BLANK_SPELLINGS,
    DECODER,
    DECODER_EXAMPLE,
    MAX_BLANKS,
    OTHER_ORDER,
    POOL,
    blank_rows,
    blank_word,
    decoder_problem,
    family,
    filled_text,
    load_decoder,
    mask_token,
    page_models,
    problem,
    run_decoder_fill,
    run_fill,
    strongest,
    unknown_flags,
    with_models_blank,
    words,
)
from ui.i18n import current_lang, t
from ui.markdown import md_escape, token_chips
from ui.navigation import ensure_shell
from ui.page_style import hide_text_model_picker

figs = shared_figures(fill_mask_figures)  # figures built once for every session with the same inputs

MODEL, TEXT, PICK = session.value("fm_model"), session.value("fm_text"), session.value("fm_pick")


def choose_model():
    """(display name, model, whether the decoder is offered) of the model to use (a masked language model or the decoder); stops the page
    with a message when this session has none (and says why when the sidebar's model is one without a
    masked-LM head)."""
    names, models = page_models(current_lang())
    chosen = getattr(session.selection(), "model_key", None)
    if chosen is not None and session.is_upload(chosen) and chosen not in models:
        st.warning(t("fill_mask.not_masked_lm", name=md_escape(chosen)), icon=":material/info:")
    if not names:
        st.info(t("fill_mask.no_models"))
        st.stop()
    if MODEL.get() not in names:
        MODEL.set(chosen if chosen in names else names[0])
    name = st.selectbox(t("fill_mask.model"), names, key=MODEL.key, format_func=model_label)
    hide_text_model_picker()  # this picker is the page's one model choice
    return name, load_decoder() if name == DECODER else models[name], DECODER in names


def model_label(name: str) -> str:
    return t("fill_mask.decoder_option", name=name) if name == DECODER else name


def _blank_clicked(token: str) -> None:
    """The word pills' callback: the clicked word becomes a blank in the text box."""
    index = PICK.get()
    if index is not None:
        TEXT.set(blank_word(TEXT.get(""), int(index), token))
        PICK.set(None)


def choose_text(token: str, example: str) -> str:
    """The sentence box and the words to click into a blank; returns the text with the model's blank. The
    box starts on ``example``, and an example left as it was follows the model chosen."""
    examples = [DECODER_EXAMPLE, *(t("fill_mask.example", token=spelling) for spelling in BLANK_SPELLINGS)]
    if not TEXT.is_set or TEXT.get() in examples:
        TEXT.set(example)
    TEXT.set(with_models_blank(TEXT.get(""), token))  # "[MASK]" typed for a RoBERTa model, say
    text = st.text_area(t("fill_mask.input", token=token), key=TEXT.key, height=90, help=t("fill_mask.input_help"))
    offered = words(text)
    if offered:
        st.pills(t("fill_mask.click_word"), list(range(len(offered))), format_func=lambda i: offered[i],
                 key=PICK.key, on_change=_blank_clicked, args=(token,))  # fmt: skip
    return text


def guesses_section(result, loaded, lang: str) -> None:
    """The sentence with every blank filled by its first guess, then each blank's top guesses."""
    ids = list(result.ids)
    for blank in result.blanks:
        ids[blank.position] = blank.guesses[0].id
    filled = filled_text(loaded, ids)
    st.markdown(t("fill_mask.filled", text=md_escape(filled)))
    columns = st.columns(min(len(result.blanks), 3))
    for number, blank in enumerate(result.blanks, start=1):
        fig = figs.guess_bars([g.token for g in blank.guesses], [g.probability for g in blank.guesses], number, lang)
        show(where=columns[(number - 1) % len(columns)], fig=fig, filename="fill-mask", key=f"fm_guesses_{number}")
    st.caption(t("fill_mask.guesses_caption"))


def heads_section(result, lang: str) -> None:
    """For one blank: every head's attention from the blank in one layer, and where each head looked most."""
    st.subheader(t("fill_mask.heads_title"), divider="gray")
    layers = result.attention.shape[0]
    c1, c2, _ = st.columns([1, 1, 2])
    count = len(result.blanks)
    blank = c1.selectbox(t("fill_mask.blank"), list(range(1, count + 1)), key="fm_blank", disabled=count == 1)
    layer = c2.selectbox(t("fill_mask.layer"), list(range(1, layers + 1)), index=layers - 1, key="fm_layer")
    blank = min(blank, count)
    position = result.blanks[blank - 1].position
    rows = blank_rows(result, blank - 1, layer - 1)
    show(figs.blank_heads_heatmap(rows, result.tokens, position, layer, blank, lang), filename="fill-mask",
         key="fm_heads")  # fmt: skip
    st.caption(t("fill_mask.heads_caption"))
    weights, looked_at = strongest(result, blank - 1)
    show(figs.layer_head_focus(weights, looked_at, lang), filename="fill-mask", key="fm_focus")
    st.caption(t("fill_mask.focus_caption"))


def decoder_view(loaded, lang: str) -> None:
    """The decoder's way: one blank's candidates, each whole sentence scored; then how this differs from
    a masked model, and the scores in parts."""
    c = loaded.config
    st.caption(t("fill_mask.decoder_about", name=DECODER, layers=c.num_layers, heads=c.num_heads))
    text = choose_text(BLANK_SPELLINGS[0], DECODER_EXAMPLE)
    wrong = decoder_problem(loaded, text)
    if wrong is not None:
        (st.info if wrong.key in ("fill_mask.empty", "fill_mask.no_blank") else st.warning)(
            t(wrong.key, **wrong.fields)
        )
        st.stop()
    found = run_decoder_fill(loaded, text, int(st.slider(t("fill_mask.top_k"), 1, 10, 5, key="fm_top_k")))
    if not found.candidates:
        st.warning(t("fill_mask.decoder_none"))
        st.stop()
    best = found.candidates[0]
    st.markdown(t("fill_mask.decoder_filled", text=md_escape(text.replace(BLANK_SPELLINGS[0], best.word, 1))))
    ranks = [c.left_rank for c in found.candidates]
    fig = figs.decoder_bars(found.ranked_words(), [c.score for c in found.candidates], ranks, found.scored, lang)
    show(fig, filename="fill-decoder", key="fm_sentences")
    st.caption(t("fill_mask.decoder_caption", k=len(found.candidates), n=found.scored))
    st.info(t("fill_mask.decoder_lesson", pool=POOL, other=OTHER_ORDER), icon=":material/swap_horiz:")
    st.dataframe(decoder_table(found), hide_index=True, width="stretch")
    st.caption(t("fill_mask.decoder_table_caption"))


def decoder_table(found) -> dict[str, list]:
    """The candidates' scores in parts: the whole sentence = before + the word + after."""
    columns = ("fill_mask.col_word", "fill_mask.col_sentence", "fill_mask.col_before", "fill_mask.col_in_blank",
               "fill_mask.col_after", "fill_mask.col_left_rank")  # fmt: skip
    values = [(c.word, c.score, c.before, c.word_logp, c.after, c.left_rank) for c in found.candidates]
    rounded = [[round(v, 2) if isinstance(v, float) else v for v in row] for row in values]
    return {t(key): [row[i] for row in rounded] for i, key in enumerate(columns)}


def main() -> None:
    ensure_shell()
    lang = current_lang()
    st.title(t("fill_mask.title"))
    st.caption(t("fill_mask.intro"))
    name, loaded, offered = choose_model()
    if name == DECODER:
        decoder_view(loaded, lang)
        return
    if offered:
        st.caption(t("fill_mask.masked_lesson", decoder=DECODER))
    token = mask_token(loaded)
    st.caption(t("fill_mask.about", family=family(loaded), token=f"`{token}`", layers=loaded.config.num_layers,
                 heads=loaded.config.num_heads))  # fmt: skip
    text = choose_text(token, t("fill_mask.example", token=token))
    wrong = problem(loaded, text, token)
    if wrong is not None:
        message = st.info if wrong.key in ("fill_mask.empty", "fill_mask.no_blank") else st.warning
        message(t(wrong.key, **wrong.fields))
        st.stop()
    result = run_fill(name, loaded, text, int(st.slider(t("fill_mask.top_k"), 1, 10, 5, key="fm_top_k")))
    unknown = unknown_flags(loaded, result.ids)
    st.markdown(f"**{t('fill_mask.tokens_title')}** " + token_chips(result.tokens, unknown, lang=lang))
    guesses_section(result, loaded, lang)
    heads_section(result, lang)
    st.caption(t("fill_mask.limits", blanks=MAX_BLANKS))


main()
