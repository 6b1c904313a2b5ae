"""Attention: per layer and head heatmaps, all heads at a glance, token-to-token lines, averages, rollout."""

from functools import partial

import numpy as np
import streamlit as st

from transformer import AnalysisResult
from transformer.rollout import attention_rollout
from ui.downloads import analysis_json_bytes, analysis_npz, download_row, matrix_csv
from ui.figures import attention as figs
from ui.models import current_selection, get_model, run_analysis
from ui.text import chosen_sentence, split_lines, text_box

VIEWS = ["One head", "Mean over heads", "Rollout"]
WINDOW = 64  # longer inputs are shown this many tokens at a time
LINES_WINDOW = 64  # the line view draws at most this many tokens
PLOT_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2, "filename": "attention"}}


def analysis_or_stop(selection, lines: list[str]) -> AnalysisResult:
    """The analysis of ``lines``, or a message and a stop (never an exception on the page)."""
    if not lines:
        st.info("Type a sentence in the box above (or pick an example) to see its attention.")
        st.stop()
    try:
        result = run_analysis(selection, lines)
    except ValueError as err:
        st.error(f"This text cannot be run: {err}")
        st.stop()
    if result.num_layers == 0:
        st.info("This model has no attention layers, so there is nothing to show here.")
        st.stop()
    return result


def _valid_choice(key: str, options: list) -> None:
    """Forget a remembered choice that the current model does not offer (e.g. head 8 of 4)."""
    if key in st.session_state and st.session_state[key] not in options:
        del st.session_state[key]


def choose_view(layers: int, heads: int) -> tuple[str, int, int]:
    """Widgets for what the big heatmap shows; returns (view, layer, head), 0-based, kept in the URL."""
    for key, count in (("layer", layers), ("head", heads)):
        _valid_choice(key, list(range(1, count + 1)))
    c1, c2, c3 = st.columns([2, 1, 1])
    view = c1.segmented_control(
        "Weights",
        VIEWS,
        default=VIEWS[0],
        key="view",
        bind="query-params",
        help="One head's softmax weights; their mean over the layer's heads; or the rollout, which chains "
        "layers 1 … L (with the residual path) to show what each position draws on in the input.",
    )
    layer = c2.selectbox("Layer", list(range(1, layers + 1)), key="layer", bind="query-params")
    head = c3.selectbox(
        "Head", list(range(1, heads + 1)), key="head", bind="query-params", disabled=view not in (None, VIEWS[0])
    )
    return view or VIEWS[0], layer - 1, head - 1


def chosen_matrix(attn: np.ndarray, view: str, layer: int, head: int) -> tuple[np.ndarray, str]:
    """The (n, n) weights the view asks for, and a title for them."""
    if view == VIEWS[1]:
        return attn[layer].mean(axis=0), f"Layer {layer + 1}, mean over {attn.shape[1]} heads"
    if view == VIEWS[2]:
        return attention_rollout(attn)[layer], f"Rollout through layers 1–{layer + 1}"
    return attn[layer, head], f"Layer {layer + 1}, head {head + 1}"


def token_window(n: int) -> tuple[int, int, bool]:
    """(first, stop, all_keys): the query rows shown; whether every key column is shown too."""
    if n <= WINDOW:
        return 0, n, False
    kept = st.session_state.get("window")
    if kept is not None and not (0 <= kept[0] <= kept[1] <= n - 1):
        del st.session_state["window"]  # a window of a longer input: start again from the beginning
    c1, c2 = st.columns([4, 1])
    first, last = c1.slider(
        "Tokens shown (positions)",
        0,
        n - 1,
        (0, WINDOW - 1),
        key="window",
        bind="query-params",
        help=f"This input has {n} tokens: pick the part to show; the figures stay readable and light.",
    )
    all_keys = c2.toggle("All key columns", key="all_keys", help="Rows stay the window; columns are every token.")
    return first, last + 1, all_keys


def heatmap_section(result, index, matrix, title, window, loaded) -> None:
    tokens = result.tokens[index]
    first, stop, all_keys = window
    k0, k1 = (0, len(tokens)) if all_keys else (first, stop)
    shown = matrix[first:stop, k0:k1]
    figure = figs.attention_heatmap(
        shown, tokens[first:stop], tokens[k0:k1], query_start=first, key_start=k0, title=title
    )
    st.plotly_chart(figure, config=PLOT_CONFIG, key="heatmap")
    st.caption("Rows: the query token; columns: the key it attends to. Colours run from 0 to the largest weight shown.")
    stem = f"attention-input{index + 1}"
    files = {
        "CSV (this matrix)": (partial(matrix_csv, shown, tokens[first:stop], tokens[k0:k1], first, k0), "csv"),
        "NPZ (all numbers)": (partial(npz_with_averages, result, index), "npz"),
        "JSON (analysis)": (partial(analysis_json_bytes, loaded, result, index), "json"),
    }
    download_row(stem, files, key="attention_download")
    st.caption("PNG: the camera button in each figure's toolbar. NPZ: every layer and head, the mean and the rollout.")


def npz_with_averages(result: AnalysisResult, index: int) -> bytes:
    """The input's numbers plus mean_over_heads (L, n, n) and rollout (L, n, n); made on click only."""
    attn = result.attention_for(index)
    return analysis_npz(result, index, mean_over_heads=attn.mean(axis=1), rollout=attention_rollout(attn))


def grid_section(attn: np.ndarray, view: str, layer: int, head: int) -> None:
    selected = (layer, head) if view == VIEWS[0] else None
    st.plotly_chart(figs.head_grid(attn, selected), config=PLOT_CONFIG, key="grid")
    st.caption(
        "Row = layer, column = head; each thumbnail is scaled to its own largest weight. "
        "Pick one with the Layer and Head boxes to see it large."
    )


def lines_section(matrix: np.ndarray, tokens: list[str], window: tuple[int, int, bool], title: str) -> None:
    first, stop, _ = window
    stop = min(stop, first + LINES_WINDOW)
    labels = [f"{first + i}:{tok}" for i, tok in enumerate(tokens[first:stop])]
    c1, c2 = st.columns([2, 3])
    threshold = c1.slider("Hide weights below", 0.0, 1.0, 0.1, 0.01, key="threshold")
    _valid_choice("focus", [None, *range(len(labels))])
    focus = c2.selectbox(
        "Lines from",
        [None, *range(len(labels))],
        key="focus",
        format_func=lambda i: "every token" if i is None else labels[i],
    )
    figure = figs.attention_lines(
        matrix[first:stop, first:stop], tokens[first:stop], start=first, threshold=threshold, focus=focus, title=title
    )
    if not (matrix[first:stop, first:stop] >= threshold).any():
        st.info("No weight reaches this threshold: lower it to see lines.")
    st.plotly_chart(figure, config=PLOT_CONFIG, key="lines")
    st.caption(
        f"Each line joins a query (left) to a key (right); thicker and darker means more weight. "
        f"Tokens {first}–{stop - 1} are drawn, with the weights among them."
    )


st.title("Attention")
st.caption("For each token (a query), how much it looks at every token (the keys), in each layer and head.")
selection = current_selection()
lines = split_lines(text_box())
result = analysis_or_stop(selection, lines)
index = chosen_sentence(lines)
tokens = result.tokens[index]
attn = result.attention_for(index)  # (L, H, n, n)
if result.truncated[index]:
    st.warning(
        f"Only the first {len(tokens):,} of {result.original_lengths[index]:,} tokens were read (maximum length)."
    )
view, layer, head = choose_view(attn.shape[0], attn.shape[1])
matrix, title = chosen_matrix(attn, view, layer, head)
window = token_window(len(tokens))
left, right = st.columns([3, 2], gap="large")
with left:
    heatmap_section(result, index, matrix, title, window, get_model(selection))
with right:
    grid_section(attn, view, layer, head)
st.subheader("Token to token", divider="gray")
lines_section(matrix, tokens, window, title)
