"""Attention: per layer and head heatmaps, all heads at a glance, token-to-token lines, averages, rollout;
for encoder-decoder models also decoder self-attention, cross-attention and all blocks at once; for
language models the look-ahead mask drawn as masked and the text repeated to show induction heads."""

from functools import partial

import numpy as np
import streamlit as st

from transformer import AnalysisResult
from ui.attention_parts import (
    Part,
    attention_part,
    cached_grid,
    chosen_matrix,
    grid_window,
    input_key,
    npz_with_averages,
    part_names,
)
from ui.charts import show
from ui.classroom.ask import ask_attention
from ui.decoder_attention import (
    Repeat,
    analysis_later,
    blocked_cells,
    decoder_captions,
    induction_note,
    is_decoder,
    readable_tokens,
    repeat_control,
)
from ui.downloads import analysis_json_bytes, download_row, file_stem, matrix_csv
from ui.figure_cache import shared_figures
from ui.figures import attention as attention_figures
from ui.figures.masks import md_code
from ui.i18n import current_lang, t
from ui.markdown import md_escape
from ui.models import Selection, current_selection, get_model
from ui.text import chosen_sentence, split_lines, text_box

figs = shared_figures(attention_figures)  # figures built once for every session with the same inputs

VIEWS = ("head", "mean", "rollout")
PARTS = ("encoder", "decoder", "cross", "all")
WINDOW = 64  # longer inputs are shown this many tokens at a time
LINES_WINDOW = 64  # the line view draws at most this many tokens
LINES_PER_QUERY = (1, 2, 3, 5, 10, 0)  # 0: every key above the threshold
DIFFUSE = 0.3  # a mean largest weight per row below this is "spread out"


def analysis_or_stop(selection, text: str | None, mode: str = "off") -> tuple[AnalysisResult, Repeat | None]:
    """The analysis of ``text`` (repeated as ``mode`` asks, for a language model) and the repeat it
    ran, or a message and a stop (never an exception on the page)."""
    if not text:
        st.info(t("attention.type_sentence"))
        st.stop()
    try:
        later, rep = analysis_later(selection, text, mode)
        result = later()
    except ValueError as err:
        st.error(t("attention.cannot_run", error=md_escape(str(err))))  # it may quote the text
        st.stop()
    if result.num_layers == 0:
        st.info(t("attention.no_layers"))
        st.stop()
    return result, rep


def _valid_choice(key: str, options: list) -> None:
    """Forget a remembered choice that the current model does not offer (e.g. head 8 of 4)."""
    if key in st.session_state and st.session_state[key] not in options:
        del st.session_state[key]


def choose_part(parts: list[str]) -> str:
    """Encoder self / decoder self / cross / all, for encoder-decoder models (kept in the URL)."""
    if len(parts) == 1:
        return "encoder"
    names = {
        "encoder": t("attention.part_encoder"),
        "decoder": t("attention.part_decoder"),
        "cross": t("attention.part_cross"),
        "all": t("attention.part_all"),
    }
    options = [p for p in PARTS if p in parts]
    _valid_choice("part", options)
    part = st.segmented_control(
        t("attention.part"),
        options,
        default="encoder",
        key="part",
        bind="query-params",
        format_func=names.get,
        help=t("attention.part_help"),
    )
    return part or "encoder"


def choose_view(layers: int, heads: int, part: str) -> tuple[str, int, int]:
    """Widgets for what the big heatmap shows; returns (view, layer, head), 0-based, kept in the URL."""
    views = list(VIEWS) if part == "encoder" else ["head", "mean"]  # rollout chains encoder layers only
    for key, options in (("layer", list(range(1, layers + 1))), ("head", list(range(1, heads + 1))), ("view", views)):
        _valid_choice(key, options)
    names = {"head": t("attention.view_head"), "mean": t("attention.view_mean"), "rollout": t("attention.view_rollout")}
    c1, c2, c3 = st.columns([3, 1, 1], vertical_alignment="bottom")
    view = c1.segmented_control(
        t("attention.weights"),
        views,
        default="head",
        key="view",
        bind="query-params",
        format_func=names.get,
        help=t("attention.weights_help"),
    )
    layer = c2.selectbox(t("attention.layer"), list(range(1, layers + 1)), key="layer", bind="query-params")
    head = c3.selectbox(
        t("attention.head"),
        list(range(1, heads + 1)),
        key="head",
        bind="query-params",
        disabled=view not in (None, "head"),
    )
    return view or "head", layer - 1, head - 1


def token_window(n: int) -> tuple[int, int, bool]:
    """(first, stop, all_keys): the query rows shown; whether every key column is shown too."""
    if n <= WINDOW:
        return 0, n, False
    kept = st.session_state.get("window")
    if kept is not None and not (0 <= kept[0] <= kept[1] <= n - 1):
        del st.session_state["window"]  # a window of a longer input: start again from the beginning
    c1, c2 = st.columns([4, 1])
    first, last = c1.slider(
        t("attention.window"),
        0,
        n - 1,
        (0, WINDOW - 1),
        key="window",
        bind="query-params",
        help=t("attention.window_help", n=n),
    )
    all_keys = c2.toggle(t("attention.all_keys"), key="all_keys", help=t("attention.all_keys_help"))
    return first, last + 1, all_keys


def heatmap_section(part: Part, matrix: np.ndarray, title: str, window, stem: str, downloads: dict, blocked=None):
    """The big heatmap of ``matrix`` in the token window, its captions and downloads; ``blocked`` (n, n)
    bool: the cells a language model's look-ahead mask blocks (drawn as masked)."""
    first, stop, all_keys = window
    k0, k1 = (0, len(part.keys)) if all_keys or not part.square else (first, stop)
    k1 = min(k1, k0 + (len(part.keys) if all_keys else WINDOW))
    shown = matrix[first:stop, k0:k1]
    figure = figs.attention_heatmap(
        shown,
        part.queries[first:stop],
        part.keys[k0:k1],
        query_start=first,
        key_start=k0,
        title=title,
        lang=current_lang(),
        blocked=None if blocked is None else blocked[first:stop, k0:k1],
    )
    show(figure, filename=stem, key="heatmap")
    st.caption(t("attention.heatmap_caption"))
    files = {
        t("attention.download_csv"): (
            # a copy: a view would keep the whole analysis alive as long as the session keeps the button
            partial(matrix_csv, shown.copy(), part.queries[first:stop], part.keys[k0:k1], first, k0),
            "csv",
        ),
        **downloads,
    }
    helps = {t("attention.download_csv"): t("attention.download_csv_help")}
    helps |= {t("attention.download_npz"): t("attention.download_npz_help")}
    download_row(stem, files, key="attention_download", helps=helps)
    st.caption(t("attention.png_caption"))


def _open_clicked_head() -> None:
    """The grid's click callback: show the clicked thumbnail's head in the big heatmap."""
    hit = figs.clicked_head(st.session_state.get("grid"))
    if hit is not None:
        st.session_state["layer"], st.session_state["head"] = hit[0] + 1, hit[1] + 1
        st.session_state["view"] = "head"


def grid_section(attn: np.ndarray, view: str, layer: int, head: int, model: str, input_key: str) -> None:
    """The layer × head grid (ten layers at a time on a deep model, those of the layer on screen)."""
    first, last = grid_window(attn.shape[0], layer)
    if (first, last) != (0, attn.shape[0]):
        st.caption(t("attention.grid_layers", first=first + 1, last=last, layers=attn.shape[0]))
    selected = (layer - first, head) if view == "head" else None
    finite = np.isfinite(attn).all(axis=(2, 3))  # (L, H)
    grid = cached_grid(attn, model, input_key, first, last)
    grid = attention_figures.select_head(grid, selected, attn[first:last].shape)
    show(grid, filename="attention-grid", key="grid", on_select=_open_clicked_head, selection_mode="points")
    st.caption(t("attention.grid_caption"))
    if not finite.all():
        bad = ", ".join(f"L{la + 1} H{h + 1}" for la, h in zip(*np.nonzero(~finite)))
        st.caption(t("attention.grid_nonfinite", heads=bad))


def lines_section(matrix: np.ndarray, tokens: list[str], window: tuple[int, int, bool], title: str) -> None:
    first, stop, _ = window
    stop = min(stop, first + LINES_WINDOW)
    labels = [f"{first + i}:{tok}" for i, tok in enumerate(tokens[first:stop])]
    shown = matrix[first:stop, first:stop]
    c1, c2, c3 = st.columns([2, 2, 3])
    per_query = c1.select_slider(
        t("attention.lines_per_query"),
        LINES_PER_QUERY,
        value=3,
        key="top_k",
        format_func=lambda k: t("attention.lines_all") if k == 0 else str(k),
        help=t("attention.lines_per_query_help"),
    )
    threshold = c2.slider(t("attention.threshold"), 0.0, 1.0, 0.0, 0.01, key="threshold")
    _valid_choice("focus", [None, *range(len(labels))])
    focus = c3.selectbox(
        t("attention.lines_from"),
        [None, *range(len(labels))],
        key="focus",
        format_func=lambda i: t("attention.every_token") if i is None else labels[i],
    )
    figure = figs.attention_lines(
        shown,
        tokens[first:stop],
        start=first,
        threshold=threshold,
        top_k=per_query or None,
        focus=focus,
        title=title,
        lang=current_lang(),
    )
    if not (shown >= threshold).any():
        st.info(t("attention.no_lines"))
    diffuse_note(shown)
    show(figure, filename="attention-lines", key="lines")
    st.caption(t("attention.lines_caption", first=first, last=stop - 1))


def diffuse_note(weights: np.ndarray) -> None:
    """One sentence on why the lines of a small model are spread out, with this input's numbers."""
    if weights.size == 0:
        return
    row_max = weights.max(axis=1)
    if float(row_max.mean()) < DIFFUSE:
        uniform = 1.0 / weights.shape[1]
        st.caption(t("attention.diffuse", top=f"{float(row_max.max()):.2f}", uniform=f"{uniform:.2f}"))


def nonfinite_or_stop(part: Part, result: AnalysisResult) -> None:
    """A clear message when the model produced NaN or infinite values; stop when nothing is left to show."""
    flagged = list(getattr(result, "nonfinite", []) or [])
    finite = np.isfinite(part.weights).all(axis=(2, 3))
    if finite.all() and not flagged:
        return
    st.error(t("attention.nonfinite", fields=", ".join(flagged) or "attention"))
    weights_bad = list(getattr(result, "weights_nonfinite", []) or [])
    if weights_bad:
        st.caption(t("attention.nonfinite_weights", names=", ".join(weights_bad[:5])))
    if not finite.any():
        st.markdown(t("attention.tokens_seen", tokens=" · ".join(md_code(tok) for tok in part.queries[:200])))
        st.stop()


def main() -> None:
    st.title(
        t("attention.title"), help=t("attention.caption")
    )  # the help, not a line: the figure fits the first screen
    selection = current_selection()
    lines = split_lines(text_box(height=68))
    index = chosen_sentence(lines)
    mode = repeat_control() if is_decoder(get_model(selection)) else "off"
    # only the chosen sentence is run: many long lines never become one giant padded batch
    text = lines[index] if lines else None
    result, _ = analysis_or_stop(selection, text, mode)
    part_name = choose_part(part_names(result))
    part = attention_part(result, 0, part_name)
    if result.truncated[0]:
        st.warning(t("attention.truncated", kept=f"{len(result.tokens[0]):,}", total=f"{result.original_lengths[0]:,}"))
    nonfinite_or_stop(part, result)
    attention_view(selection, text, part_name, mode)


def downloads_for(selection: Selection, text: str, mode: str) -> dict:
    """The input's downloads, built only when clicked: {label: (bytes function, extension)}.

    Streamlit keeps a download's function in the session until the next run: the functions hold
    the model and the sentence, never the analysis (up to ~67 MB), and look it up when clicked."""
    loaded, (later, _) = get_model(selection), analysis_later(selection, text, mode)
    return {
        t("attention.download_npz"): (lambda: npz_with_averages(later(), 0), "npz"),
        t("attention.download_json"): (lambda: analysis_json_bytes(loaded, later(), 0), "json"),
    }


# A fragment: the view, layer, head, window and line controls rerun only this function (no sidebar,
# no other figure of the page). Its arguments stay small: Streamlit keeps a fragment's arguments
# for its reruns, per session, so passing the weights would pin up to ~67 MB in every session of a
# class; the weights are looked up again in the byte-bounded analysis cache instead (a dictionary
# lookup; recomputed only if the cache has dropped them).
@st.fragment(key="attention_view")
def attention_view(selection: Selection, text: str, part_name: str, mode: str) -> None:
    """The view controls and the heatmap, head grid and lines they drive."""
    result, rep = analysis_or_stop(selection, text, mode)
    loaded = get_model(selection)
    part = attention_part(result, 0, part_name)
    if is_decoder(loaded):  # tokens as they read: ␣ a space, a byte piece as its character, ⟨…⟩ the start token
        shown = readable_tokens(loaded, result)
        part = Part(part.weights, shown, shown)
    downloads, key = downloads_for(selection, text, mode), input_key(selection, text, part_name, mode)
    attn = part.weights
    view, layer, head = choose_view(attn.shape[0], attn.shape[1], part_name)
    ask_attention(part.queries, part.keys, attn, layer, head, selection.model_key, text)  # a teacher's only
    matrix, title = chosen_matrix(attn, view, layer, head)
    blocked = blocked_cells(loaded.config, layer, len(part.queries), view) if is_decoder(loaded) else None
    if note := (induction_note(selection, attn, rep, layer, head) if view == "head" else ""):
        st.markdown(note)
    stem = file_stem("attention", part_name, f"L{layer + 1}", f"H{head + 1}" if view == "head" else view, text=text)
    window = token_window(len(part.queries)) if part.square else (0, min(len(part.queries), WINDOW), False)
    left, right = st.columns([3, 2], gap="medium")
    with left:
        if np.isfinite(matrix).all():
            heatmap_section(part, matrix, title, window, stem, downloads, blocked)
            for caption in decoder_captions(loaded, result, view) if blocked is not None else []:
                st.caption(caption)
        else:
            st.warning(t("attention.head_nonfinite", title=title))
    with right:
        grid_section(attn, view, layer, head, selection.model_key, key)
    if part.square and np.isfinite(matrix).all():
        st.subheader(t("attention.lines_header"), divider="gray")
        lines_section(matrix, part.queries, window, title)


main()
