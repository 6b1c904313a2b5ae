"""Positional encoding lab: the sinusoids, their similarity, and what the chosen model adds to a sentence."""

import numpy as np
import streamlit as st

from transformer.positional import sinusoidal_encoding, wavelengths
from transformer.stepper import positional_table
from ui.figures import positional as fig
from ui.figures.common import token_labels
from ui.figures.masks import md_code
from ui.models import current_selection, get_model, run_analysis
from ui.text import chosen_sentence, split_lines, text_box

MAX_D_MODEL, MAX_LENGTH = 1024, 2048


def controls() -> tuple[int, int, float]:
    st.latex(
        r"PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{base^{2i/d_{model}}}\right) \qquad "
        r"PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{base^{2i/d_{model}}}\right)"
    )
    left, middle, right = st.columns(3)
    d_model = left.number_input(
        "d_model (dimensions)",
        1,
        MAX_D_MODEL,
        128,
        step=2,
        key="pe_d_model",
        help="An odd d_model keeps a last sine column without its cosine.",
    )
    length = middle.number_input("length (positions)", 1, MAX_LENGTH, 100, step=10, key="pe_length")
    base = right.number_input(
        "base",
        1.0,
        1e8,
        10000.0,
        step=1000.0,
        format="%.0f",
        key="pe_base",
        help="10000 in the paper. The slowest dimension's period is about 2π·base.",
    )
    return int(d_model), int(length), float(base)


def thinning_note(length: int, d_model: int) -> None:
    shown = fig.thinned_axes(length, d_model)
    if shown:
        st.caption(
            f"The table is {length} × {d_model}; the heatmap draws {shown} (at most {fig.MAX_HEATMAP_ROWS} × "
            f"{fig.MAX_HEATMAP_COLS} cells) so the page stays fast. Hover or lower the sizes for every cell."
        )


def sinusoid_lab() -> None:
    st.header("The sinusoids")
    d_model, length, base = controls()
    pe = sinusoidal_encoding(length, d_model, base)  # (length, d_model)
    periods = wavelengths(d_model, base)
    st.plotly_chart(fig.encoding_heatmap(pe, f"Positional encoding, {length} positions × {d_model} dimensions"))
    thinning_note(length, d_model)
    dims = st.multiselect(
        "Dimensions to draw",
        list(range(d_model)),
        fig.default_dimensions(d_model),
        key=f"pe_dims_{d_model}",
        max_selections=len(fig.CURVE_COLOURS),
        help="Even dimensions are sines, odd ones cosines of the same frequency.",
    )
    left, right = st.columns(2)
    with left:
        if dims:
            st.plotly_chart(fig.dimension_curves(pe, sorted(dims), periods))
        else:
            st.info("Choose at least one dimension to draw its curve.")
    right.plotly_chart(fig.wavelength_figure(periods))
    st.markdown(
        f"Dimension 0 repeats every **{periods[0]:.1f}** positions; the slowest, dimension {d_model - 1}, "
        f"every **{periods[-1]:,.0f}** — longer than the {length} positions shown, so each position gets a "
        "different pattern."
    )
    similarity_section(pe)


def similarity_section(pe: np.ndarray) -> None:
    st.subheader("Which positions look alike?")
    kind = st.radio(
        "Similarity",
        ["cosine", "dot"],
        horizontal=True,
        key="pe_similarity",
        format_func=lambda k: "cosine" if k == "cosine" else "dot product PE·PEᵀ",
    )
    left, right = st.columns(2)
    left.plotly_chart(fig.similarity_heatmap(pe, kind))
    right.plotly_chart(fig.distance_profile(pe, kind))
    st.markdown(
        "Nearby positions are most alike, and the strongest band runs along the diagonal: PE(p)·PE(p+Δ) is a "
        "sum of cos(Δ·ω) terms, so it depends only on the distance Δ, not on where you start "
        "(the lines on the right coincide)."
    )


def sentence_section() -> None:
    selection = current_selection()
    loaded = get_model(selection)
    cfg = loaded.config
    name = md_code(loaded.name or selection.model_key)
    st.header(f"In the model: {name}")
    lines = split_lines(text_box(show_examples=False))
    if not lines:
        st.info("Type a sentence above to see its embeddings.")
        return
    index = chosen_sentence(lines)
    try:
        result = run_analysis(selection, lines)
    except ValueError as err:
        st.error(str(err))
        return
    describe_positional(loaded, cfg)
    n = int(result.lengths[index])
    labels = token_labels(result.tokens[index])
    tokens, positions = result.token_embeddings[index, :n], result.positional_encodings[:n]
    combined = result.embeddings[index, :n]
    st.plotly_chart(fig.embedding_parts(tokens, positions, combined, labels))
    norms = [np.linalg.norm(a, axis=-1) for a in (tokens, positions, combined)]
    st.plotly_chart(fig.norm_bars(labels, *norms))
    st.markdown(fig.size_caption(name, norms[0], norms[1]))
    if cfg.scale_embedding:
        st.caption(
            f"This model multiplies its token embeddings by √d_model = {np.sqrt(cfg.d_model):.1f} before "
            "adding the positions, as in the paper."
        )


def describe_positional(loaded, cfg) -> None:
    """What kind of positions the model uses, with its learned table when it has one."""
    if cfg.positional == "none":
        st.warning(
            "This model has **no positional encoding**: it sees the sentence as a bag of words "
            "(the 'positional' part below is zero), so word order can only matter through a class token."
        )
    elif cfg.positional == "learned":
        st.info(
            "This model **learns** its positions: instead of sinusoids it adds a trained table, one row per "
            f"position (up to {cfg.max_len}). Its table and the similarity between its rows:"
        )
        table = positional_table(loaded)
        left, right = st.columns(2)
        left.plotly_chart(fig.encoding_heatmap(table, "Learned positional table", meta="pe-learned"))
        right.plotly_chart(fig.similarity_heatmap(table[: min(len(table), 256)], "cosine", "pe-learned-similarity"))
    else:
        st.markdown(f"This model uses the sinusoids above with d_model = {cfg.d_model} and base = {cfg.pe_base:g}.")


st.title("Positional encoding")
st.markdown(
    "Attention by itself does not know the order of the words. The Transformer adds a *positional "
    "encoding* to each token's embedding: a vector of sines and cosines whose frequency falls across "
    "the dimensions."
)
sinusoid_lab()
st.divider()
sentence_section()
