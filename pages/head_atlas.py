"""Head atlas: what each attention head of a model does, as a layer x head grid coloured by role,
the scores behind it, and the heatmap of any head clicked."""

import pandas as pd
import streamlit as st

from transformer.analysis.head_roles import BROAD_THRESHOLD, ROLE_THRESHOLD
from transformer.translation import get_task
from ui import session
from ui.atlas import atlas_for, atlas_models, found_heads, grid_windows
from ui.charts import show
from ui.classroom.ask import ask_head_role
from ui.echo import cut_to_limit
from ui.figure_cache import shared_figures
from ui.figures import atlas as atlas_figures
from ui.i18n import current_lang, t, translate
from ui.language_models import about_short, attention_notes, is_pretrained, korean_default_note, load_lm
from ui.navigation import ensure_shell
from ui.text import default_text
from ui.translation_models import TRANSLATION_MODELS

figs = shared_figures(atlas_figures)  # figures built once for every session with the same inputs

ATLAS_CHARS = 2000  # characters of text the atlas reads
SCORE_KEYS = ("previous", "next", "diagonal", "sink", "punctuation", "broadness", "induction", "alignment", "locality")
ROLE_KEYS = (
    "previous",
    "next",
    "diagonal",
    "sink",
    "punctuation",
    "induction",
    "alignment",
    "locality",
    "broad",
    "mixed",
)


def names() -> dict[str, str]:
    """Shown names of roles and scores (literal keys: the catalogue test finds them)."""
    shown = {
        "previous": t("atlas.role_previous"),
        "next": t("atlas.role_next"),
        "diagonal": t("atlas.role_diagonal"),
        "sink": t("atlas.role_sink"),
        "punctuation": t("atlas.role_punctuation"),
        "induction": t("atlas.role_induction"),
        "alignment": t("atlas.role_alignment"),
        "locality": t("atlas.role_locality"),
        "broad": t("atlas.role_broad"),
        "mixed": t("atlas.role_mixed"),
        "broadness": t("atlas.score_broadness"),
    }
    return shown


def choose_model() -> tuple[str, str]:
    models = atlas_models()
    if not models:
        st.info(t("atlas.no_model"))
        st.stop()
    selection = session.selection()
    if st.session_state.get("atlas_model") not in models:
        st.session_state.pop("atlas_model", None)
        sidebar = selection.model_key if selection is not None else None
        st.session_state["atlas_model"] = sidebar if sidebar in models else next(iter(models))
    families = {"classifier": t("atlas.family_classifier"), "encoder-decoder": t("atlas.family_seq2seq"),
                "vision": t("atlas.family_vision"), "language-model": t("atlas.family_lm")}  # fmt: skip
    name = st.selectbox(t("atlas.model"), list(models), key="atlas_model",
                        format_func=lambda n: f"{n} ({families[models[n]]})")  # fmt: skip
    if models[name] == "language-model":  # what it is: SmolLM2 pretrained by others, review-lm trained here
        st.caption(
            about_short(name, load_lm(name, getattr(session.selection(), "device", "cpu")), session.is_upload(name))
        )
        if note := korean_default_note(name):
            st.caption(note)
    return name, models[name]


def default_input(family: str, name: str) -> str:
    if family == "encoder-decoder":
        return get_task(TRANSLATION_MODELS[name]).examples()[0].text
    if family == "language-model":  # SmolLM2 reads English only: its example is English in either language
        return translate("atlas.lm_example", "en") if is_pretrained(name) else t("atlas.lm_example")
    return default_text(current_lang())


def choose_input(family: str, name: str) -> str:
    if family == "vision":
        st.caption(t("atlas.vision_input"))
        return ""
    key = f"atlas_text_{family}_{name}"
    if key not in st.session_state:
        st.session_state[key] = default_input(family, name)
    # no max_chars: the browser would keep the old text in silence when a longer one is pasted; cut here, said
    text, cut = cut_to_limit(st.text_input(t("atlas.input"), key=key, help=t("atlas.input_help")) or "", ATLAS_CHARS)
    if cut:
        st.warning(cut)
    if not text.strip():
        st.info(t("atlas.empty"))
        st.stop()
    return text


def choose_part(parts):
    if len(parts) == 1:
        return parts[0]
    labels = {"encoder": t("atlas.part_encoder"), "decoder": t("atlas.part_decoder"), "cross": t("atlas.part_cross")}
    chosen = st.radio(t("atlas.part"), [p.name for p in parts], format_func=labels.get, key="atlas_part",
                      horizontal=True)  # fmt: skip
    return next(p for p in parts if p.name == chosen)


def clicked_head(event, n_layers: int, n_heads: int) -> None:
    """A click on a grid cell selects that head in the menus below (drawn after the grid); a click is
    applied once, so the menus can still be changed afterwards."""
    selection = event.get("selection", {}) if isinstance(event, dict) else getattr(event, "selection", {})
    points = (selection or {}).get("points", [])
    if not points:
        return
    layers = [t("atlas.fig_layer", layer=i + 1) for i in range(n_layers)]
    heads = [t("atlas.fig_head", head=h + 1) for h in range(n_heads)]
    point = points[0]
    if point.get("y") in layers and point.get("x") in heads:
        chosen = (layers.index(point["y"]) + 1, heads.index(point["x"]) + 1)
        if session.ATLAS_CLICK.get() != chosen:
            session.ATLAS_CLICK.set(chosen)
            st.session_state["atlas_layer"], st.session_state["atlas_head"] = chosen


def shared_heads(family: str, name: str, device: str) -> tuple[int, ...] | None:
    """For a language model with grouped-query attention, the key/value head each query head shares
    (said in a caption); else None."""
    if family != "language-model":
        return None
    notes, kv_heads = attention_notes(load_lm(name, device).config, t("atlas.kv_scored"))
    for note in notes:
        st.caption(note)
    return kv_heads


def numbers_table(part, shown, kv_heads: tuple[int, ...] | None = None) -> None:
    rows = []
    n_layers, n_heads = part.roles.shape
    for layer in range(n_layers):
        for head in range(n_heads):
            row = {t("atlas.col_head"): f"{layer + 1}.{head + 1}", t("atlas.col_role"): shown[part.roles[layer, head]]}
            if kv_heads is not None and part.name == "decoder":
                row[t("atlas.col_kv")] = kv_heads[head] + 1
            for key in SCORE_KEYS:
                if key in part.scores:
                    row[shown[key]] = round(float(part.scores[key][layer, head]), 3)
            rows.append(row)
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")


def head_view(part, family, lang) -> None:
    n_layers, n_heads = part.roles.shape
    c1, c2 = st.columns(2)
    for key, count in (("atlas_layer", n_layers), ("atlas_head", n_heads)):
        if st.session_state.get(key) not in range(1, count + 1):
            st.session_state.pop(key, None)
    layer = c1.selectbox(t("atlas.layer"), list(range(1, n_layers + 1)), key="atlas_layer")
    head = c2.selectbox(t("atlas.head"), list(range(1, n_heads + 1)), key="atlas_head")
    role = names()[part.roles[layer - 1, head - 1]]
    title = t("atlas.fig_head_title", layer=layer, head=head, role=role)
    causal = part.name == "decoder"
    weights = part.weights[layer - 1, head - 1]
    show(fig=figs.head_heatmap(weights, part.queries, part.keys, title, causal, lang), key="atlas_heatmap")


def choose_window(n_layers: int) -> tuple[int, int]:
    """The layers the grid shows: all of them up to 12, else ten at a time (never 270 unreadable cells)."""
    windows = grid_windows(n_layers)
    if len(windows) == 1:
        return windows[0]
    labels = {f"{first}–{last}": (first, last) for first, last in windows}  # a tuple would be read as several choices
    chosen = st.segmented_control(t("atlas.layers_shown"), list(labels), key="atlas_window", default=next(iter(labels)))
    return labels.get(chosen, windows[0])


def found_summary(part, shown) -> None:
    """The heads the atlas found for the roles that matter in a language model, with their scores."""
    found = found_heads(part)
    if not found:
        return
    lines = [t("atlas.found_role", role=shown[role], heads=", ".join(f"L{layer + 1} H{head + 1} ({score:.2f})"
                                                                      for layer, head, score in heads))
             for role, heads in found.items()]  # fmt: skip
    st.markdown(t("atlas.found_title") + "  \n" + "  \n".join(lines))


def help_box(family: str) -> None:
    with st.expander(t("atlas.help_title")):
        st.markdown(t("atlas.help_common", role=ROLE_THRESHOLD, broad=BROAD_THRESHOLD))
        if family == "language-model":
            st.markdown(t("atlas.help_induction"))
        if family == "encoder-decoder":
            st.markdown(t("atlas.help_alignment"))
        if family == "vision":
            st.markdown(t("atlas.help_locality"))


ensure_shell()  # a deep link runs the navigation and sidebar first
lang = current_lang()
st.title(t("atlas.title"), help=t("atlas.intro"))  # the help, not a line: the grid starts higher
name, family = choose_model()
device = getattr(session.selection(), "device", "cpu")
text = choose_input(family, name)
try:
    parts = atlas_for(family, name, device, text)
except ValueError as err:
    st.error(t("atlas.failed", error=str(err)))
    st.stop()
part = choose_part(parts)
shown = names()
n_layers, n_heads = part.roles.shape
first, last = choose_window(n_layers)
window = slice(first - 1, last)
grid = figs.role_grid(part.roles[window], part.strength[window], {k: v[window] for k, v in part.scores.items()},
                      shown, lang, first - 1)  # fmt: skip
event = show(fig=grid, key="atlas_grid", on_select="rerun", selection_mode="points")
clicked_head(event, n_layers, n_heads)
ask_head_role(part, name, text)  # a teacher's only
st.caption(t("atlas.grid_caption"))
if family == "language-model":
    found_summary(part, shown)
help_box(family)
numbers_table(part, shown, shared_heads(family, name, device))
head_view(part, family, lang)
