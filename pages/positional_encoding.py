"""Positional encoding lab: the sinusoids, their similarity, and what the chosen model adds to a sentence."""

import numpy as np
import streamlit as st

from transformer.analysis.stepper import positional_table
from transformer.core.positional import sinusoidal_encoding, wavelengths
from ui import session
from ui.charts import show
from ui.embedding_stages import colour_limit, embedding_stages, segment_vector
from ui.figure_cache import shared_figures
from ui.figures import positional as positional_figures
from ui.figures import rotary as rotary_figures
from ui.figures.common import token_labels
from ui.figures.masks import md_code
from ui.i18n import current_lang, t
from ui.models import current_selection, get_model, run_analysis
from ui.text import chosen_sentence, split_lines, text_box

rotary = shared_figures(rotary_figures)  # figures built once for every session with the same inputs

fig = shared_figures(positional_figures)  # figures built once for every session with the same inputs

MAX_D_MODEL, MAX_LENGTH = 1024, 2048
DEFAULT_LENGTH = 100  # positions drawn by default: enough to see the slow waves, few enough to see the fast ones


def model_defaults(cfg) -> tuple[int, int, float]:
    """(d_model, length, base) of the selected model, within the controls' limits; the paper's base 10000
    for a model whose base is not a sinusoids' one (a rotary model's turns its heads)."""
    length = min(cfg.max_len, DEFAULT_LENGTH, MAX_LENGTH)
    base = float(getattr(cfg, "pe_base", 0.0) or 10000.0) if cfg.positional == "sinusoidal" else 10000.0
    return min(cfg.d_model, MAX_D_MODEL), max(1, length), base


USES = {  # what a model adds for positions, in one line
    "sinusoidal": "positional.uses_sinusoidal",
    "learned": "positional.uses_learned",
    "rotary": "positional.uses_rotary",
    "none": "positional.uses_none",
}


def what_the_model_uses(cfg, name: str) -> None:
    """One line beside the sinusoid lab: what the selected model really adds for positions."""
    fields = dict(name=name, d_model=cfg.d_model, base=f"{cfg.pe_base:g}", max_len=cfg.max_len)
    st.info(t(USES[cfg.positional], **fields), icon=":material/info:")


def controls(model_key: str, defaults: tuple[int, int, float]) -> tuple[int, int, float]:
    """d_model, length and base; they start from the selected model's values (and start again from
    them when another model is picked)."""
    previous = session.POSITIONAL_MODEL.get()
    if previous is not None and previous != model_key:
        for key in ("pe_d_model", "pe_length", "pe_base"):
            st.session_state.pop(key, None)
    session.POSITIONAL_MODEL.set(model_key)
    st.latex(
        r"PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{base^{2i/d_{model}}}\right) \qquad "
        r"PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{base^{2i/d_{model}}}\right)"
    )
    d_default, length_default, base_default = defaults
    left, middle, right = st.columns(3)
    d_model = left.number_input(
        t("positional.d_model"),
        1,
        MAX_D_MODEL,
        d_default,
        step=2,
        key="pe_d_model",
        help=t("positional.d_model_help", d=d_default),
    )
    length = middle.number_input(t("positional.length"), 1, MAX_LENGTH, length_default, step=10, key="pe_length")
    base = right.number_input(
        t("positional.base"),
        1.0,
        1e8,
        base_default,
        step=1000.0,
        format="%.0f",
        key="pe_base",
        help=t("positional.base_help"),
    )
    return int(d_model), int(length), float(base)


def thinning_note(length: int, d_model: int) -> None:
    shown = fig.thinned_axes(length, d_model, current_lang())
    if shown:
        st.caption(
            t(
                "positional.thinned",
                length=length,
                d_model=d_model,
                shown=shown,
                rows=fig.MAX_HEATMAP_ROWS,
                cols=fig.MAX_HEATMAP_COLS,
            )
        )


def sinusoid_lab(model_key: str, loaded) -> None:
    """The formula's lab, whatever the model: curves, the position × dimension map, the controls."""
    st.header(t("positional.sinusoids_header"))
    what_the_model_uses(loaded.config, md_code(loaded.name or model_key))
    d_model, length, base = controls(model_key, model_defaults(loaded.config))
    lang = current_lang()
    pe = sinusoidal_encoding(length, d_model, base)  # (length, d_model)
    periods = wavelengths(d_model, base)
    title = t("positional.heatmap_title", length=length, d_model=d_model)
    show(fig.encoding_heatmap(pe, title, lang=lang), filename=f"positional-encoding-{length}x{d_model}")
    thinning_note(length, d_model)
    dims = st.multiselect(
        t("positional.dimensions"),
        list(range(d_model)),
        fig.default_dimensions(d_model),
        key=f"pe_dims_{d_model}",
        max_selections=len(fig.CURVE_COLOURS),
        help=t("positional.dimensions_help"),
        placeholder=t("widgets.choose"),
    )
    left, right = st.columns(2)
    if dims:
        show(fig.dimension_curves(pe, sorted(dims), periods, lang=lang), where=left, filename="pe-curves")
    else:
        left.info(t("positional.no_dimensions"))
    show(fig.wavelength_figure(periods, lang=lang), where=right, filename="pe-periods")
    st.markdown(
        t(
            "positional.periods_text",
            fast=f"{periods[0]:.1f}",
            last=d_model - 1,
            slow=f"{periods[-1]:,.0f}",
            length=length,
        )
    )
    similarity_section(pe)


def similarity_section(pe: np.ndarray) -> None:
    st.subheader(t("positional.similarity_header"))
    names = {"cosine": t("positional.cosine"), "dot": t("positional.dot")}
    kind = st.radio(
        t("positional.similarity"), ["cosine", "dot"], horizontal=True, key="pe_similarity", format_func=names.get
    )
    lang = current_lang()
    left, right = st.columns(2)
    show(fig.similarity_heatmap(pe, kind, lang=lang), where=left, filename="pe-similarity")
    show(fig.distance_profile(pe, kind, lang=lang), where=right, filename="pe-distance")
    st.markdown(t("positional.similarity_text"))


def sentence_section(selection, loaded) -> None:
    cfg = loaded.config
    name = md_code(loaded.name or selection.model_key)
    st.header(t("positional.model_header", name=name))
    lines = split_lines(text_box(show_examples=False, height=68))
    if not lines:
        st.info(t("positional.type_sentence"))
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
    parts = (result.token_embeddings[index, :n], result.positional_encodings[:n], result.embeddings[index, :n])
    if not all(np.isfinite(a).all() for a in parts):
        st.error(t("positional.nonfinite"))
        return
    stages = embedding_stages(*parts, segment=segment_vector(loaded.model))
    draw_stages(stages, labels, name)
    if cfg.scale_embedding:
        st.caption(t("positional.scaled", root=f"{np.sqrt(cfg.d_model):.1f}"))


def draw_stages(stages, labels: list[str], name: str) -> None:
    """The parts and their plain sum; then, for a model with an embedding LayerNorm, what it makes of the sum."""
    lang, normed = current_lang(), stages.normed is not None
    sum_key = "figures.part_sum_segment" if stages.segment is not None else "figures.part_sum_plain"
    keys = dict(sum_key=sum_key, title_key="figures.parts_title_normed") if normed else {}
    parts = fig.embedding_parts(stages.tokens, stages.positions, stages.summed, labels, lang=lang, **keys)
    show(parts, filename="pe-sentence")
    if stages.segment is not None:
        st.caption(t("positional.segment_caption", norm=f"{np.linalg.norm(stages.segment):.2f}"))
    norms = stages.norms()
    if normed:
        show(fig.normed_heatmap(stages.normed, labels, lang=lang), filename="pe-normed")
        sizes = {key: f"{np.median(norms[key]):.2f}" for key in ("summed", "normed")}
        top = f"{np.abs(stages.normed).max():.1f}"
        st.caption(t("positional.normed_caption", width=stages.normed.shape[1], top=top, **sizes))
    bars = fig.norm_bars(labels, norms["tokens"], norms["positions"], norms["summed"], lang, norms.get("normed"))
    show(bars, filename="pe-norms")
    st.markdown(fig.size_caption(name, norms["tokens"], norms["positions"], lang))


def describe_positional(loaded, cfg) -> None:
    """What kind of positions the model uses, with its learned table when it has one."""
    if cfg.positional == "none":
        st.warning(t("positional.none"))
    elif cfg.positional == "learned":
        st.info(t("positional.learned", max_len=cfg.max_len))
        table = position_vectors(loaded)
        if table is None or not np.isfinite(table).all():
            return
        lang = current_lang()
        title, limit = t("positional.learned_title"), colour_limit(table)  # its own scale: its values are small
        show(fig.encoding_heatmap(table, title, meta="pe-learned", lang=lang, limit=limit), filename="pe-learned")
        st.markdown(t("positional.learned_map", positions=table.shape[0], width=table.shape[1]))
        show(fig.learned_similarity(table, lang), filename="pe-learned-map")  # full width: its title is long
    elif cfg.positional == "rotary":
        fields = dict(dim=cfg.rotary_dim, head_dim=cfg.head_dim, base=f"{cfg.pe_base:g}")
        st.markdown(t("positional.rotary_model", **fields))
    else:
        st.markdown(t("positional.sinusoidal", d_model=cfg.d_model, base=f"{cfg.pe_base:g}"))


def position_vectors(loaded) -> np.ndarray | None:
    """The model's positional table (max_len, D): its encoder's, or a decoder-only model's (GPT-2)."""
    try:
        return positional_table(loaded)
    except ValueError:  # no encoder: a language model keeps its embedding at the top
        positions = getattr(getattr(loaded.model, "embedding", None), "positions", None)
        return None if positions is None else positions(loaded.config.max_len).detach().float().cpu().numpy()


ROTARY_DEFAULTS = (64, 10000.0, "halves")  # a Llama head: 64 rotated dimensions, base 10000, halves
ROTARY_QUERY, ROTARY_KEY = 5, 3  # the first cells drawn: 3 -> 5, and its twin 40 -> 42


def rotary_settings(cfg) -> tuple[int, float, str, bool]:
    """(rotated dimensions per head, base, pairing style, whether they are the selected model's own)."""
    if cfg.positional == "rotary":
        return cfg.rotary_dim, float(cfg.pe_base), cfg.rotary_style, True
    return *ROTARY_DEFAULTS, False


def rotary_section(cfg) -> None:
    """A query and a key turned by their positions (the core's rotary function): one pair's plane, the
    score over (query, key) positions, and the score against the distance from two starts."""
    st.header(t("positional.rotary_header"))
    st.markdown(t("positional.rotary_intro"))
    st.latex(r"(R_m\,q)\cdot(R_n\,k) = q^{\top} R_{n-m}\,k \qquad \theta_i = base^{-2i/d}")
    dim, base, style, own = rotary_settings(cfg)
    styles = {"halves": t("positional.rotary_halves", half=dim // 2), "interleaved": t("positional.rotary_interleaved")}
    fields = dict(dim=dim, base=f"{base:g}", style=styles.get(style, style))
    st.caption(t("positional.rotary_own" if own else "positional.rotary_other", **fields))
    st.markdown(t("positional.rotary_example"))
    demo = rotary.rotary_demo(dim, base, style)
    last = rotary.POSITIONS - 1
    left, middle, right = st.columns(3)
    pair = 0  # a head that rotates one pair only has no pair to choose (a slider needs two values)
    if dim > 2:
        pair = left.slider(
            t("positional.rotary_pair"),
            0,
            dim // 2 - 1,
            0,
            key=f"rope_pair_{dim}",
            help=t("positional.rotary_pair_help"),
        )
    query = middle.slider(t("positional.rotary_query"), 0, last, ROTARY_QUERY, key="rope_query")
    key = right.slider(t("positional.rotary_key"), 0, last, ROTARY_KEY, key="rope_key")
    lang = current_lang()
    plane, words = st.columns([3, 2], vertical_alignment="center")
    show(rotary.rotation_plane(demo, pair, query, key, lang), where=plane, filename="rope-plane")
    words.markdown(
        t(
            "positional.rotary_plane_text",
            pair=pair,
            step=f"{rotary.degrees(demo.step[pair]):.3g}",
            query=query,
            key=key,
            angle=f"{rotary.plane_angle(demo, pair, query, key):.1f}",
            score=f"{demo.scores[query, key]:.4f}",
        )
    )
    marks = rotary.distance_marks(query - key)
    left, right = st.columns(2)
    show(rotary.score_heatmap(demo.scores, marks, lang), where=left, filename="rope-scores")
    show(rotary.score_by_distance(demo.scores, marks, lang), where=right, filename="rope-distance")
    (q1, k1), (q2, k2) = marks
    scores = dict(s1=f"{demo.scores[q1, k1]:.4f}", s2=f"{demo.scores[q2, k2]:.4f}")
    st.markdown(t("positional.rotary_scores_text", q1=q1, k1=k1, q2=q2, k2=k2, **scores))


def main() -> None:
    st.title(t("positional.title"))
    st.markdown(t("positional.intro"))
    selection = current_selection()
    loaded = get_model(selection)
    sinusoid_lab(selection.model_key, loaded)
    st.divider()
    rotary_section(loaded.config)
    st.divider()
    sentence_section(selection, loaded)


main()
