"""Masks: padding a batch, the look-ahead mask (on the real decoder of an encoder-decoder model), and one
attention head step by step with editable masks."""

from dataclasses import replace
from functools import partial

import numpy as np
import streamlit as st
import torch

from transformer.analysis.stepper import decoder_head_steps, head_steps, mask_changes
from transformer.core.masks import padding_mask
from transformer.lm.steps import lm_head_steps
from ui import mask_lab, session
from ui.charts import show
from ui.figure_cache import shared_figures
from ui.figures import masks as masks_figures
from ui.figures import stepper
from ui.figures.common import token_labels
from ui.i18n import current_lang, t
from ui.language_models import about_lm, language_models, load_lm, local_layers_caption, prompt_of
from ui.models import current_selection, get_model, run_analysis
from ui.text import chosen_sentence, example_menu, reads_korean, split_lines, text_box

fig = shared_figures(masks_figures)  # figures built once for every session with the same inputs

LM_TOKENS = 32  # the language model's tokens stepped through (a longer sentence is cut, and the page says so)
MAX_TOKENS = 64  # per sentence: beyond this a T × T grid of cells is no longer readable, even on a projector
EDITABLE_UP_TO = 24  # tokens: beyond this the list of cells to switch is too long to use
# The clickable mask's plot area (px at 1366 px): in two fifths of the page, or in half for longer inputs.
MASK_WIDTH_PX = {True: 230, False: 330}
SMALL_MASK_UP_TO = 8  # tokens
VIEW_KEY = "mask_view"  # which section the page shows; kept in the address, so a lesson link opens it
VIEWS = ("padding", "look-ahead", "step")


# shown names: name -> catalogue key (written out: the catalogue test finds every key in the sources)
VIEW_TEXT = {"padding": "masks.view_padding", "look-ahead": "masks.view_look_ahead", "step": "masks.view_step"}
PRESET_TEXT = {"own": "masks.preset_own", "none": "masks.preset_none", "look-ahead": "masks.preset_look_ahead",
               "both": "masks.preset_both"}  # fmt: skip
MASK_TEXT = {"padding": "masks.mask_padding", "look-ahead": "masks.mask_look_ahead", "both": "masks.mask_both"}


def choose_view() -> str:
    """One section at a time (the page held 17 figures, 9,000 px at 1366 px): chosen here or by a link."""
    if st.session_state.get(VIEW_KEY) not in VIEWS:
        wanted = st.query_params.get(VIEW_KEY)
        st.session_state[VIEW_KEY] = wanted if wanted in VIEWS else VIEWS[0]
    view = st.segmented_control(t("masks.view"), list(VIEWS), format_func=lambda v: t(VIEW_TEXT[v]), key=VIEW_KEY,
                                required=True, bind="query-params", label_visibility="collapsed")  # fmt: skip
    return view if view in VIEWS else VIEWS[0]


def read_batch(loaded) -> list[str]:
    """The shared sentences as a batch (with two shorter ones added to a single sentence, when asked);
    lines with no words are left out and said so."""
    box, side = st.columns([2, 1], vertical_alignment="bottom")  # the examples and the switch beside the box
    with box:
        lines = split_lines(text_box(height=68, show_examples=False))
    with side:
        example_menu()
    add = len(lines) == 1 and side.toggle(
        t("masks.add_examples"), value=True, key="mask_pad_demo", help=t("masks.add_examples_help")
    )
    batch = mask_lab.batch_of(lines, add, reads_korean(loaded.vocab))
    if batch.wordless:
        st.warning(t("masks.wordless", lines=", ".join(map(str, batch.wordless))))
    if batch.cut:
        st.warning(t("masks.batch_cut", limit=mask_lab.MAX_BATCH, count=batch.cut))
    return batch.lines


def special_names(loaded) -> tuple[str, str]:
    """The model's own padding and unknown tokens ("<pad>"/"<unk>" here, "[PAD]"/"[UNK]" in a BERT vocabulary)."""
    vocab, cfg = loaded.vocab, loaded.config
    try:
        return vocab.id_to_token(cfg.pad_id) or "<pad>", vocab.id_to_token(vocab.unk_id) or "<unk>"
    except (AttributeError, IndexError, KeyError, TypeError):
        return "<pad>", "<unk>"


def padding_section(result, loaded) -> None:
    """The padding mask of every sentence first (the figures on the first screen), then how it is made."""
    pad_id = loaded.config.pad_id
    pad, unk = special_names(loaded)
    ids = torch.from_numpy(result.ids)
    mask = padding_mask(ids, pad_id).numpy()  # (B, 1, T, T), as the model builds it
    b, length = result.ids.shape
    lang = current_lang()
    tokens = mask_lab.batch_tokens(result.tokens, length, pad)
    columns = st.columns(min(b, 3))
    for row in range(b):
        figure = fig.mask_heatmap(
            mask[row, 0],
            token_labels(tokens[row]),
            t("masks.padding_title", n=row + 1),
            ignored_rows=result.ids[row] == pad_id,
            meta=f"padding-mask-{row}",
            lang=lang,
        )
        show(figure, where=columns[row % len(columns)], filename=f"padding-mask-{row + 1}")
    st.markdown(t("masks.padding_intro", b=b, t=length, pad_id=pad_id, pad=pad, unk=unk))
    frame = fig.padded_frame(result.tokens, result.ids, result.unknown, pad_token=pad, unk_token=unk, lang=lang)
    st.dataframe(frame.style.map(lambda c: "background-color: #d9d9d9; color: #333" if c.endswith(pad) else ""))
    st.markdown(t("masks.padding_shape", b=b, t=length, pad=pad))


def three_masks(ids: np.ndarray, labels: list[str], pad_id: int, prefix: str = "la") -> None:
    """The padding mask, the look-ahead mask and their combination for one sequence of ids (T,)."""
    masks, pads, lang = mask_lab.three_masks(ids, pad_id), ids == pad_id, current_lang()
    for column, (name, mask) in zip(st.columns(3), masks.items()):
        ignored = None if name == "look-ahead" else pads
        title = t(MASK_TEXT[name])
        figure = fig.mask_heatmap(mask, labels, title, ignored_rows=ignored, meta=f"{prefix}-{name}", lang=lang)
        show(figure, where=column, filename=f"{prefix}-{name}")


def look_ahead_section(loaded, result, index: int, ids: np.ndarray, labels: list[str], sentence: str) -> None:
    if result.decoder_tokens is None:
        st.markdown(t("masks.look_ahead_intro"))
        three_masks(ids, labels, loaded.config.pad_id)
    else:
        decoder_section(loaded, result, index)
    if language_models():
        language_model_steps(sentence)


@st.fragment(key="lm_stepper")  # a layer or head reruns this part only
def language_model_steps(sentence: str) -> None:
    """The bundled language model's masked self-attention on the chosen sentence, one head step by step:
    a decoder-only model uses the look-ahead mask in every layer (no padding, no encoder)."""
    names, device = language_models(), current_selection().device  # SmolLM2 first in English, review-lm in Korean
    name = st.radio(t("generate.model"), names, key="lm_model", horizontal=True) if len(names) > 1 else names[0]
    cfg = load_lm(name, device).config
    local = local_layers_caption(cfg)
    st.subheader(t("masks.lm_title_local" if local else "masks.lm_title"), divider="gray")
    st.caption(about_lm(name, load_lm(name, device), False))
    prompt = prompt_of(name, device, sentence)
    tokens = prompt.tokens[:LM_TOKENS]
    st.markdown(t("masks.lm_intro", tokens=" ".join(fig.markdown_labels(tokens))))
    if len(prompt.tokens) > LM_TOKENS:
        st.caption(t("masks.lm_cut", kept=LM_TOKENS, count=len(prompt.tokens)))
    if local:
        st.caption(local)
    a, b, _ = st.columns([1, 1, 3])
    layer = a.selectbox(t("masks.layer"), list(range(1, cfg.num_layers + 1)), key="lm_layer")
    head = b.selectbox(t("masks.head"), list(range(1, cfg.num_heads + 1)), key="lm_head")
    ids = torch.tensor([prompt.ids[:LM_TOKENS]])
    loaded = load_lm(name, device)
    steps = lm_head_steps(loaded, ids, layer - 1, head - 1)
    if not finite_steps(steps):
        return
    diff = float(np.abs(steps.weights - mask_lab.own_weights(loaded.model, ids, layer - 1, head - 1)).max())
    st.success(t("masks.lm_own", layer=layer, head=head, diff=f"{diff:.1e}"))
    draw_stages(steps, token_labels(tokens), prefix="lm-stage")


def decoder_section(loaded, result, index: int) -> None:
    """The real decoder's masked self-attention, step by step, for an encoder-decoder model."""
    cfg = loaded.config
    target = result.decoder_tokens[index]
    st.markdown(t("masks.decoder_intro", target=" ".join(fig.markdown_labels(target))))
    tgt_ids = mask_lab.token_ids(target, loaded.target_vocab or loaded.vocab)
    labels = token_labels(target)
    three_masks(tgt_ids, labels, cfg.target_pad_id, prefix="dec")
    if cfg.num_decoder_layers == 0:
        return
    decoder_steps(loaded, result, index, tgt_ids, labels)


@st.fragment(key="decoder_stepper")  # a layer or head reruns this part only; the analysis is the full run's
def decoder_steps(loaded, result, index: int, tgt_ids: np.ndarray, labels: list[str]) -> None:
    """Layer and head of the decoder, and that head's masked self-attention step by step."""
    cfg = loaded.config
    target = result.decoder_tokens[index]
    a, b, _ = st.columns([1, 1, 3])
    layer = a.selectbox(t("masks.layer"), list(range(1, cfg.num_decoder_layers + 1)), key="dec_layer")
    head = b.selectbox(t("masks.head"), list(range(1, cfg.num_heads + 1)), key="dec_head")
    n = int(result.lengths[index])
    src = torch.from_numpy(result.ids[index : index + 1, :n])
    steps = decoder_head_steps(loaded, src, torch.from_numpy(tgt_ids[None]), layer - 1, head - 1)
    if not finite_steps(steps):
        return
    reference = result.decoder_self_attention[index, layer - 1, head - 1, : len(target), : len(target)]
    diff = float(np.abs(steps.weights - reference).max())
    st.success(t("masks.decoder_own", layer=layer, head=head, diff=f"{diff:.1e}"))
    draw_stages(steps, labels, prefix="dec-stage")


def toggles_key(sentence: int, length: int) -> str:
    return f"mask_toggle_{sentence}_{length}"


def click_key(sentence: int, length: int) -> str:
    """The clickable mask's key: a new one after each click, so that clicking the same cell again
    (a selection plotly already holds) is a new event and switches it back."""
    clicks = session.mask_clicks(sentence, length).get(0)  # see _cell_clicked
    return f"mask_click_{sentence}_{length}_{clicks}"


def _cell_clicked(sentence: int, length: int) -> None:
    """The mask figure's click callback: flip the clicked cell (it joins or leaves the switched cells)."""
    cell = fig.clicked_cell(session.value(click_key(sentence, length)).get())
    if cell is None:
        return
    key = toggles_key(sentence, length)
    st.session_state[key] = mask_lab.flip_cell(list(st.session_state.get(key, [])), cell, length)
    session.mask_clicks(sentence, length).count_up()


def edit_mask(base: np.ndarray, plain: list[str], sentence: int) -> np.ndarray:
    """The cells of ``base`` (T, T) the user switched (by clicking the mask figure, or by name in the
    list under it); returns the edited copy."""
    length = base.shape[0]
    if length > EDITABLE_UP_TO:
        st.caption(t("masks.edit_limit", limit=EDITABLE_UP_TO))
        return base
    states = {True: t("masks.cell_open"), False: t("masks.cell_blocked")}
    key = toggles_key(sentence, length)
    cells = list(range(length * length))
    st.session_state[key] = [c for c in st.session_state.get(key, []) if c in cells]
    with st.expander(t("masks.switch_cells_list", count=len(st.session_state[key]))):
        toggles = st.multiselect(t("masks.switch_cells"), cells, key=key, help=t("masks.switch_cells_help"),
                                 format_func=lambda c: mask_lab.cell_text(c, base, plain, states),
                                 placeholder=t("widgets.choose"))  # fmt: skip
    return mask_lab.switched(base, toggles)


def stepper_controls(cfg) -> tuple[int, int, float, str]:
    """Layer and head (shown from 1, returned 0-based), the fill for blocked cells and the mask preset."""
    a, b, c, d = st.columns([1, 1, 1, 2], vertical_alignment="top")
    layer = a.selectbox(t("masks.layer"), list(range(1, cfg.num_layers + 1)), key="mask_layer")
    head = b.selectbox(t("masks.head"), list(range(1, cfg.num_heads + 1)), key="mask_head")
    fill = c.radio(t("masks.fill"), [-1e9, -1e10], key="mask_fill", format_func=fig.fill_text,
                   help=t("masks.fill_help"))  # fmt: skip
    preset = d.selectbox(t("masks.preset"), list(mask_lab.PRESETS), format_func=lambda p: t(PRESET_TEXT[p]),
                         key="mask_preset")  # fmt: skip
    return int(layer) - 1, int(head) - 1, float(fill), preset


def finite_steps(steps) -> bool:
    """False (with a message) when the model's numbers for this head are NaN or infinite."""
    if mask_lab.finite(steps):
        return True
    st.error(t("masks.nonfinite", layer=steps.layer + 1, head=steps.head + 1))
    return False


# A fragment: switching a cell, a preset, the fill, the layer, the head or the worked example's query reruns
# only this function (its arguments are the full run's model and analysis), not the page and its sidebar.
@st.fragment(key="mask_stepper")
def head_stepper(loaded, result, index: int) -> None:
    """One head step by step under an editable mask, and the worked example of one query."""
    cfg = loaded.config
    ids = result.ids[index]
    pad_id = cfg.pad_id
    tokens = mask_lab.batch_tokens(result.tokens, ids.shape[0], special_names(loaded)[0])[index]
    plain = [f"{i}:{tok}" for i, tok in enumerate(tokens)]
    layer, head, fill, preset = stepper_controls(cfg)
    small = ids.shape[0] <= SMALL_MASK_UP_TO
    left, right = st.columns([2, 3] if small else [1, 1])
    with right:
        mask = edit_mask(mask_lab.preset_mask(preset, ids, pad_id), plain, index)
    tensor = torch.from_numpy(ids[None])
    own = head_steps(loaded, tensor, layer, head, fill=fill)
    steps = head_steps(loaded, tensor, layer, head, mask, fill)
    clickable_mask(own.mask, mask, tokens, index, left)
    if not finite_steps(steps):
        return
    with right:
        report_mask(own, steps, result, index, tokens)
    draw_stages(steps, token_labels(tokens))
    worked_example(steps, tokens, index)


def clickable_mask(own: np.ndarray, mask: np.ndarray, tokens: list[str], index: int, where) -> None:
    """The mask in use, square; a click on a cell switches it (up to EDITABLE_UP_TO tokens)."""
    length = mask.shape[0]
    editable = length <= EDITABLE_UP_TO
    figure = fig.mask_heatmap(mask, token_labels(tokens), t("masks.mask_used"), changed=own != mask, meta="step-mask",
                              lang=current_lang(), clickable=editable,
                              width_px=MASK_WIDTH_PX[length <= SMALL_MASK_UP_TO])  # fmt: skip
    if editable:
        clicked = partial(_cell_clicked, index, length)
        key = click_key(index, length)
        show(figure, where=where, filename="mask-used", key=key, on_select=clicked, selection_mode="points")
        where.caption(t("masks.click_cells"))
    else:
        show(figure, where=where, filename="mask-used")


def report_mask(own, steps, result, index: int, tokens: list[str]) -> None:
    """What the current mask changed relative to the model's own mask."""
    changed = own.mask != steps.mask
    if not changed.any():
        reference = result.attention[index, steps.layer, steps.head]
        diff = float(np.abs(steps.weights - reference).max())
        st.success(t("masks.own_mask", layer=steps.layer + 1, head=steps.head + 1, diff=f"{diff:.1e}"))
    else:
        st.markdown(t("masks.cells_differ", count=int(changed.sum())))
        for line in fig.describe_changes(mask_changes(own, steps), fig.markdown_labels(tokens), current_lang()):
            st.markdown(f"- {line}")
    st.markdown(t("masks.scale_note", d_k=steps.d_k, root=f"{np.sqrt(steps.d_k):.2f}", fill=fig.fill_text(steps.fill)))


def draw_stages(steps, labels: list[str], prefix: str = "stage") -> None:
    """The five stages, two per row for short inputs and one per row for longer ones, so that the numbers
    in the cells never run into each other; the output (T × d_k) is wide, so it gets a row of its own."""
    lang = current_lang()
    figures = mask_lab.stage_figures(steps, labels, prefix, lang)
    per_row = 2 if len(labels) <= mask_lab.TWO_PER_ROW_UP_TO else 1
    for start in range(0, 4, per_row):
        for column, figure in zip(st.columns(per_row), figures[start : start + per_row]):
            show(figure, where=column, filename=figure.layout.meta)
    show(figures[4], filename=f"{prefix}-output")
    if not any(f.data[0].texttemplate for f in figures[:4]):
        st.caption(t("masks.numbers_hidden"))
    with st.expander(t("masks.qkv")):
        for column, figure in zip(st.columns(3), mask_lab.qkv_figures(steps, labels, prefix, lang)):
            show(figure, where=column, filename=figure.layout.meta)


def worked_example(steps, tokens: list[str], index: int) -> None:
    st.subheader(t("masks.worked_header"), divider="gray")
    labels, md = token_labels(tokens), fig.markdown_labels(tokens)
    length = len(labels)
    query = st.selectbox(t("masks.query_word"), list(range(length)), index=min(1, length - 1),
                         key=f"mask_query_{index}_{length}", format_func=lambda i: f"{i}:{tokens[i]}")  # fmt: skip
    blocked, lang = ~steps.mask[query], current_lang()
    walk = stepper.query_walkthrough(labels, query, steps.scaled[query], steps.weights[query], blocked, lang=lang)
    show(walk, filename="walkthrough")
    fields = mask_lab.worked_fields(steps, query, md)
    st.markdown(t("masks.worked_text", **fields) if fields else t("masks.worked_all_blocked", query=md[query]))
    numbers = length <= fig.NUMBERS_UP_TO and steps.d_k <= 32
    figure = stepper.weighted_sum_heatmap(labels, query, steps.weights[query], steps.v, numbers=numbers, lang=lang)
    show(figure, filename="weighted-sum")


def main() -> None:
    st.title(t("masks.title"), help=t("masks.intro"))  # the help, not a line: the figures fit the first screen
    view = choose_view()
    selection = current_selection()
    loaded = get_model(selection)
    if view == "padding":
        lines = read_batch(loaded)
    else:  # the batch is the same as on the padding view: folded, so that the section fits the first screen
        batch, chooser = st.columns([3, 2], vertical_alignment="bottom")
        with batch.expander(t("masks.batch_folded")):
            lines = read_batch(loaded)
    if not lines:
        st.info(t("masks.type_batch"))
        return
    try:
        result = run_analysis(replace(selection, max_len=min(selection.max_len, MAX_TOKENS)), lines)
    except ValueError as err:
        st.error(str(err))
        return
    if any(result.truncated):
        st.warning(t("masks.truncated", kept=result.max_len, limit=MAX_TOKENS))
    if view == "padding":
        padding_section(result, loaded)
        return
    with chooser:
        index = chosen_sentence(lines, key="mask_sentence")
    tokens = mask_lab.batch_tokens(result.tokens, result.ids.shape[1], special_names(loaded)[0])[index]
    if view == "look-ahead":
        look_ahead_section(loaded, result, index, result.ids[index], token_labels(tokens), lines[index])
    elif loaded.config.num_layers == 0:
        st.info(t("masks.no_layers"))
    else:
        head_stepper(loaded, result, index)


main()
