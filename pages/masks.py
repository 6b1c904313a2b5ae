"""Masks: padding a batch, the look-ahead mask, and one attention head step by step with editable masks."""

from dataclasses import replace

import numpy as np
import streamlit as st
import torch

from transformer.masks import decoder_self_mask, look_ahead_mask, padding_mask
from transformer.stepper import head_steps, mask_changes
from transformer.tokenizer import basic_english
from ui.figures import masks as fig
from ui.figures.common import token_labels
from ui.models import current_selection, get_model, run_analysis
from ui.text import chosen_sentence

DEFAULT_BATCH = "The cat sat on the mat.\nI loved this movie!\nBoring."
MAX_BATCH = 6
MAX_TOKENS = 64  # per sentence: beyond this a T × T grid of cells is no longer readable, even on a projector
EDITABLE_UP_TO = 24  # tokens: beyond this the list of cells to switch is too long to use
PRESETS = {
    "own": "the model's own (padding)",
    "none": "none: every cell open",
    "look-ahead": "look-ahead",
    "both": "padding + look-ahead",
}


def read_batch() -> list[str]:
    """The batch the user typed, without blank lines and lines that have no words (said on the page)."""
    text = st.text_area(
        "A batch — one sentence per line",
        DEFAULT_BATCH,
        key="mask_batch",
        height=120,
        max_chars=5000,
        help="Sentences of different lengths are padded to the longest with <pad>.",
    )
    raw = (text or "").strip().splitlines()  # blank lines at either end are not "empty rows"
    blank = sum(1 for line in raw if not line.strip())
    lines = [line.strip() for line in raw if line.strip()]
    if blank:
        st.info(f"{blank} empty line{'s' if blank > 1 else ''} left out of the batch.")
    wordless = [n + 1 for n, line in enumerate(raw) if line.strip() and not basic_english(line)]
    if wordless:
        st.warning(f"Line {', '.join(map(str, wordless))} has no words after tokenising; left out of the batch.")
        lines = [line for line in lines if basic_english(line)]
    if len(lines) > MAX_BATCH:
        st.warning(f"The first {MAX_BATCH} of {len(lines)} sentences are used: masks of more do not fit a screen.")
        lines = lines[:MAX_BATCH]
    return lines


def batch_tokens(result, pad: str = "<pad>") -> list[list[str]]:
    """Every sentence's tokens padded to T with ``<pad>``, as the model sees the batch."""
    t = result.ids.shape[1]
    return [toks + [pad] * (t - len(toks)) for toks in result.tokens]


def padding_section(result, pad_id: int) -> None:
    st.header("1. Padding: one batch, different lengths")
    ids = torch.from_numpy(result.ids)
    mask = padding_mask(ids, pad_id).numpy()  # (B, 1, T, T), as the model builds it
    b, t = result.ids.shape
    st.markdown(
        f"The batch becomes one table of ids, **{b} × {t}**: shorter sentences are filled with "
        f"`<pad>` (id {pad_id}). Unknown words become `<unk>`."
    )
    frame = fig.padded_frame(result.tokens, result.ids, result.unknown)
    st.dataframe(frame.style.map(lambda c: "background-color: #d9d9d9; color: #555" if c.endswith("<pad>") else ""))
    st.markdown(
        f"The padding mask has shape **(B, 1, T, T) = ({b}, 1, {t}, {t})**: for each sentence, "
        "row = query, column = key, **1 = may attend**, 0 = blocked. Every `<pad>` **key** is blocked, so no "
        "word takes anything from padding. Rows of `<pad>` **queries** are *not* blocked (pale blue): they "
        "attend to the real words like any other row, so every row stays a proper softmax with no NaN, and "
        "their outputs are simply ignored afterwards (pooling skips them)."
    )
    tokens = batch_tokens(result)
    columns = st.columns(min(b, 3))
    for row in range(b):
        labels = token_labels(tokens[row])
        figure = fig.mask_heatmap(
            mask[row, 0],
            labels,
            f"Sentence {row + 1}: padding mask",
            ignored_rows=result.ids[row] == pad_id,
            meta=f"padding-mask-{row}",
        )
        columns[row % len(columns)].plotly_chart(figure)


def look_ahead_section(ids: np.ndarray, labels: list[str], pad_id: int) -> None:
    st.header("2. Look-ahead: a decoder may not peek")
    st.markdown(
        "A decoder predicts word *t* from words 0..*t*, so query *t* may only see keys 0..*t*: the "
        "look-ahead mask is lower-triangular. A decoder combines it with the padding mask — a cell is open "
        "only if it is open in both."
    )
    row = torch.from_numpy(ids[None])  # (1, T)
    t = ids.shape[0]
    pads = ids == pad_id
    left, middle, right = st.columns(3)
    left.plotly_chart(
        fig.mask_heatmap(
            padding_mask(row, pad_id)[0, 0].numpy(), labels, "padding", ignored_rows=pads, meta="la-padding"
        )
    )
    middle.plotly_chart(fig.mask_heatmap(look_ahead_mask(t).numpy(), labels, "look-ahead", meta="la-look-ahead"))
    right.plotly_chart(
        fig.mask_heatmap(
            decoder_self_mask(row, pad_id)[0, 0].numpy(),
            labels,
            "padding + look-ahead",
            ignored_rows=pads,
            meta="la-both",
        )
    )


def preset_mask(preset: str, ids: np.ndarray, pad_id: int) -> np.ndarray:
    """(T, T) bool for a preset name of PRESETS."""
    row = torch.from_numpy(ids[None])
    t = ids.shape[0]
    masks = {
        "own": padding_mask(row, pad_id)[0, 0],
        "none": torch.ones(t, t, dtype=torch.bool),
        "look-ahead": look_ahead_mask(t),
        "both": decoder_self_mask(row, pad_id)[0, 0],
    }
    return masks[preset].numpy().copy()


def edit_mask(base: np.ndarray, plain: list[str], sentence: int) -> np.ndarray:
    """Let the user switch cells of ``base`` (T, T); returns the edited copy."""
    t = base.shape[0]
    if t > EDITABLE_UP_TO:
        st.caption(f"Switching single cells is offered for up to {EDITABLE_UP_TO} tokens; use a preset.")
        return base
    state = {True: "open", False: "blocked"}
    toggles = st.multiselect(
        "Switch cells (query → key)",
        list(range(t * t)),
        key=f"mask_toggle_{sentence}_{t}",
        format_func=lambda c: (
            f"{plain[c // t]} → {plain[c % t]}  ({state[bool(base[c // t, c % t])]} → {state[not base[c // t, c % t]]})"
        ),
        select_all=False,
        help="Each chosen cell is flipped: an open cell is blocked, a blocked one opened.",
    )
    edited = base.copy()
    for cell in toggles:
        edited[cell // t, cell % t] = not edited[cell // t, cell % t]
    return edited


def stepper_controls(cfg) -> tuple[int, int, float, str]:
    a, b, c, d = st.columns([1, 1, 1, 2])
    layer = a.selectbox("Layer", list(range(cfg.num_layers)), key="mask_layer")
    head = b.selectbox("Head", list(range(cfg.num_heads)), key="mask_head")
    fill = c.radio(
        "Fill for blocked cells",
        [-1e9, -1e10],
        key="mask_fill",
        format_func=fig.fill_text,
        help="The notebooks use −1e10, this package −1e9: after softmax both give exactly 0.",
    )
    preset = d.radio("Mask", list(PRESETS), format_func=PRESETS.get, key="mask_preset", horizontal=True)
    return int(layer), int(head), float(fill), preset


def stepper_section(loaded, result, index: int) -> None:
    st.header("3. One head, step by step")
    cfg = loaded.config
    if cfg.num_layers == 0:
        st.info("This model has no attention layers to step through.")
        return
    ids = result.ids[index]
    t, pad_id = ids.shape[0], cfg.pad_id
    tokens = batch_tokens(result)[index]
    plain, labels = [f"{i}:{tok}" for i, tok in enumerate(tokens)], token_labels(tokens)
    layer, head, fill, preset = stepper_controls(cfg)
    mask = edit_mask(preset_mask(preset, ids, pad_id), plain, index)
    tensor = torch.from_numpy(ids[None])
    own = head_steps(loaded, tensor, layer, head, fill=fill)
    steps = head_steps(loaded, tensor, layer, head, mask, fill)
    report_mask(own, steps, result, index, tokens)
    draw_stages(steps, labels, t <= fig.NUMBERS_UP_TO)
    worked_example(steps, tokens, index)


def report_mask(own, steps, result, index: int, tokens: list[str]) -> None:
    """The current mask, and what changed relative to the model's own mask."""
    labels = token_labels(tokens)
    changed = own.mask != steps.mask
    left, right = st.columns([2, 3])
    left.plotly_chart(
        fig.mask_heatmap(steps.mask, labels, "The mask used (orange = changed)", changed=changed, meta="step-mask")
    )
    with right:
        if not changed.any():
            reference = result.attention[index, steps.layer, steps.head]
            diff = float(np.abs(steps.weights - reference).max())
            st.success(
                f"This is the model's own mask: the weights below are the model's attention weights for layer "
                f"{steps.layer}, head {steps.head} (largest difference from the analysis: {diff:.1e})."
            )
        else:
            st.markdown(
                f"**{int(changed.sum())} cell{'s' if changed.sum() > 1 else ''} differ from the model's own "
                "mask.** Compared with the model's own weights:"
            )
            for line in fig.describe_changes(mask_changes(own, steps), fig.markdown_labels(tokens)):
                st.markdown(f"- {line}")
        st.markdown(
            f"Head size d_k = {steps.d_k}, so scores are divided by √{steps.d_k} = {np.sqrt(steps.d_k):.2f}. "
            f"Blocked cells get {fig.fill_text(steps.fill)} before the softmax, which makes their weight exactly 0."
        )


def draw_stages(steps, labels: list[str], numbers: bool) -> None:
    blocked = ~steps.mask
    dims = [str(i) for i in range(steps.d_k)]
    figures = [
        fig.stage_heatmap(steps.scores, labels, labels, "① scores = Q·Kᵀ", "stage-scores", numbers=numbers),
        fig.stage_heatmap(
            steps.scaled, labels, labels, f"② ÷ √d_k = ÷ {np.sqrt(steps.d_k):.2f}", "stage-scaled", numbers=numbers
        ),
        fig.stage_heatmap(
            steps.masked,
            labels,
            labels,
            f"③ mask: blocked cells = {fig.fill_text(steps.fill)}",
            "stage-masked",
            blocked=blocked,
            numbers=numbers,
        ),
        fig.stage_heatmap(
            steps.weights,
            labels,
            labels,
            "④ softmax → weights (rows sum to 1)",
            "stage-weights",
            blocked=blocked,
            weights=True,
            numbers=numbers,
        ),
        fig.stage_heatmap(
            steps.output,
            labels,
            dims,
            "⑤ weights × V = the head's output",
            "stage-output",
            numbers=numbers and steps.d_k <= 24,
        ),
    ]
    for start in (0, 2):  # two per row; the output (T × d_k) is wide, so it gets a row of its own
        columns = st.columns(2)
        for column, figure in zip(columns, figures[start : start + 2]):
            column.plotly_chart(figure)
    st.plotly_chart(figures[4])
    if not numbers:
        st.caption(f"Numbers are written in the cells for up to {fig.NUMBERS_UP_TO} tokens; hover for values here.")
    with st.expander("Q, K and V of this head"):
        columns = st.columns(3)
        for column, name, matrix in zip(columns, "QKV", (steps.q, steps.k, steps.v)):
            column.plotly_chart(
                fig.stage_heatmap(
                    matrix, labels, dims, name, f"stage-{name.lower()}", numbers=numbers and steps.d_k <= 16
                )
            )


def worked_example(steps, tokens: list[str], index: int) -> None:
    st.header("4. Worked example: one query")
    labels, md = token_labels(tokens), fig.markdown_labels(tokens)
    t = len(labels)
    query = st.selectbox(
        "Query word",
        list(range(t)),
        index=min(1, t - 1),
        key=f"mask_query_{index}_{t}",
        format_func=lambda i: f"{i}:{tokens[i]}",
    )
    blocked = ~steps.mask[query]
    st.plotly_chart(fig.query_walkthrough(labels, query, steps.scaled[query], steps.weights[query], blocked))
    top = int(np.argmax(steps.weights[query]))
    if steps.weights[query].any():
        st.markdown(
            f"For {md[query]}: its query vector q meets each key k. With key {md[top]}: q·k = "
            f"**{steps.scores[query, top]:.2f}**, ÷ √{steps.d_k} = **{steps.scaled[query, top]:.2f}**; the softmax "
            f"turns the row into weights that sum to {steps.weights[query].sum():.2f}, and {md[top]} gets the "
            f"largest, **{steps.weights[query, top]:.2f}**. The output is Σ weight × v, row by row below."
        )
    else:
        st.markdown(f"Every key is blocked for {md[query]}: its weights are all 0 and its output is zero.")
    st.plotly_chart(
        fig.weighted_sum_heatmap(
            labels, query, steps.weights[query], steps.v, numbers=t <= fig.NUMBERS_UP_TO and steps.d_k <= 32
        )
    )


def main() -> None:
    st.title("Masks")
    st.markdown(
        "A mask says which keys each query may attend to. Blocked cells get a huge negative score, so the "
        "softmax gives them weight 0."
    )
    selection = current_selection()
    loaded = get_model(selection)
    lines = read_batch()
    if not lines:
        st.info("Type at least one sentence (one per line) to build a batch.")
        return
    try:
        result = run_analysis(replace(selection, max_len=min(selection.max_len, MAX_TOKENS)), lines)
    except ValueError as err:
        st.error(str(err))
        return
    if any(result.truncated):
        st.warning(
            f"Sentences longer than {result.max_len} tokens were cut here (this page shows at most "
            f"{MAX_TOKENS} tokens per sentence, and the sidebar's maximum length applies too)."
        )
    padding_section(result, loaded.config.pad_id)
    index = chosen_sentence(lines, key="mask_sentence")
    st.caption("The sections below use the chosen sentence as it sits in the padded batch.")
    look_ahead_section(result.ids[index], token_labels(batch_tokens(result)[index]), loaded.config.pad_id)
    stepper_section(loaded, result, index)


main()
