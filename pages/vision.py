"""Vision: a Vision Transformer trained here, its prediction, and where it looks over the picture."""

from __future__ import annotations

from functools import partial

import numpy as np
import streamlit as st

from transformer.vision import VisionAnalysis
from transformer.vision.maps import (
    filter_components,
    patch_index,
    position_similarity,
    query_maps,
    similarity_mosaic,
)
from transformer.vision.metrics import iou_per_class
from ui import session
from ui import vision_view as view
from ui.charts import show
from ui.downloads import arrays_npz, download_row
from ui.figure_cache import shared_figures
from ui.figures import vision as vision_figures
from ui.i18n import current_lang, t
from ui.navigation import ensure_shell
from ui.page_style import hide_text_model_picker
from ui.vision_models import (
    analysis_json,
    analyze_vision,
    get_vision,
    head_mask_tuple,
    own_pictures_only,
    shown_classes,
    vision_models,
)
from ui.vision_pictures import choose_image, drawn_image, keep_valid, picture_source
from ui.vision_unknown import unknown_share

figs = shared_figures(vision_figures)  # figures built once for every session with the same inputs

UNSURE_BELOW = 0.8  # a top probability below this is shown as "unsure", with the runners-up


def choose_model() -> tuple[str, str]:
    names = vision_models()
    if not names:
        st.info(t("vision.no_models"))
        st.stop()
    keep_valid("vmodel", names)
    name = st.selectbox(t("vision.model"), names, key="vmodel", bind="query-params")
    hide_text_model_picker()  # the page's one model picker
    return name, getattr(session.selection(), "device", "cpu")


def prediction_section(loaded, result: VisionAnalysis, truth, lang: str, drawn: bool = False) -> None:
    """The prediction; ``drawn``: the picture comes from the drawing box (a digit was meant, so a picture
    unlike the training digits gets a note to look at the top 3, not a warning that it is no digit)."""
    c = loaded.config
    if c.task == "classification":
        label = result.label(0)
        prob = float(result.probabilities[0].max())
        st.metric(t("vision.predicted"), label, t("vision.confidence", p=100 * prob), delta_color="off")
        ranked = view.top_classes(result.probabilities[0], c.label_names)
        if prob < UNSURE_BELOW:
            st.warning(t("vision.unsure", p=100 * prob, top=ranked), icon=":material/help:")
        else:
            st.caption(t("vision.top3", top=ranked))
        if truth is not None:
            st.caption(t("vision.truth", label=c.label_names[truth]))
        elif (unknown := unknown_share(result.images[0])) is not None and drawn:
            st.info(t("vision.drawn_unlike", share=100 * unknown[0], limit=100 * unknown[1]), icon=":material/draw:")
        elif unknown is not None:  # an upload: is it a digit at all?
            st.warning(t("vision.not_a_digit", share=100 * unknown[0], limit=100 * unknown[1]), icon=":material/help:")
        shown = shown_classes(result.probabilities[0])
        names = tuple(c.label_names[k] for k in shown)
        show(figs.probability_bars(result.probabilities[0][shown], names, lang), filename="vision", key="vprob")
        if len(shown) < c.num_classes:
            st.caption(t("vision.bars_top", k=len(shown), n=c.num_classes))
        return
    show(figs.mask_pair(result.mask[0], truth, c.label_names, lang), filename="vision", key="vmask")
    if truth is not None:
        iou = iou_per_class(result.mask[0], truth, c.num_classes)
        st.table(view.iou_table(figs.shown_labels(c.label_names, lang), iou, lang))


def attention_controls(layers: int, heads: int, class_token: bool) -> tuple[str, int, int, float]:
    views = view.names("view_", view.VIEWS, current_lang())
    c1, c2, c3, c4 = st.columns([3, 1, 1, 2])
    keep_valid("vlayer", list(range(1, layers + 1)))
    keep_valid("vhead", list(range(1, heads + 1)))
    shown = c1.radio(t("vision.view"), list(view.VIEWS), key="vview", format_func=views.get, horizontal=True)
    layer = c2.selectbox(t("vision.layer"), list(range(1, layers + 1)), index=layers - 1, key="vlayer")
    head = c3.selectbox(t("vision.head"), list(range(1, heads + 1)), key="vhead", disabled=shown != "cls")
    opacity = c4.slider(t("vision.opacity"), 0.0, 1.0, 0.6, 0.05, key="vopacity")
    return shown, layer - 1, head - 1, opacity


def overlay_section(loaded, result: VisionAnalysis, lang: str) -> tuple[str, int, int]:
    c = loaded.config
    st.subheader(t("vision.attention_header"), divider="gray")
    if not c.class_token:
        st.info(t("vision.no_class_token"))
        return "mean", 0, 0
    if c.task == "segmentation":
        st.caption(t("vision.cls_segmenter_note"))
    attn = result.attention[0]
    shown, layer, head, opacity = attention_controls(attn.shape[0], attn.shape[1], c.class_token)
    grid_map, title = view.attention_map(attn, shown, layer, head, c.grid, lang)
    left, right = st.columns([2, 3], gap="large")
    with left:
        fig = figs.attention_overlay(result.images[0], grid_map, c.patch_size, title, opacity, lang, clickable=True)
        show(fig, filename="vision", key=patch_click_key("voverlay"), on_select=partial(_patch_clicked, "voverlay"),
             selection_mode="points")  # fmt: skip
        st.caption(t("vision.overlay_caption") + " " + t("vision.click_patch"))
    with right:
        maps = query_maps(attn, 0, c.grid, 1)
        selected = (layer, head) if shown == "cls" else None
        show(figs.head_grid(maps, result.images[0], c.patch_size, lang, selected), filename="vision", key="vgrid")
        st.caption(t("vision.grid_caption"))
    return shown, layer, head


def patch_click_key(name: str) -> str:
    """The overlay's chart key: a new one after each click, so that the same patch can be clicked again."""
    return f"{name}_{session.PATCH_CLICKS.get(0)}"


def _patch_clicked(name: str) -> None:
    """A clickable overlay's callback: the clicked patch becomes the query of the patch section."""
    hit = figs.clicked_patch(st.session_state.get(patch_click_key(name)))
    if hit is not None:
        st.session_state["vprow"], st.session_state["vpcol"] = hit[0] + 1, hit[1] + 1
        session.PATCH_CLICKS.count_up()


def patch_section(loaded, result: VisionAnalysis, layer: int, lang: str) -> None:
    c = loaded.config
    st.subheader(t("vision.patch_header"), divider="gray")
    c1, c2, _ = st.columns([1, 1, 3])
    row = c1.selectbox(t("vision.patch_row"), list(range(1, c.grid + 1)), index=c.grid // 2, key="vprow")
    col = c2.selectbox(t("vision.patch_col"), list(range(1, c.grid + 1)), index=c.grid // 2, key="vpcol")
    query = patch_index(row - 1, col - 1, c.grid) + int(c.class_token)
    maps = query_maps(result.attention[0], query, c.grid, int(c.class_token))  # (L, H, g, g)
    heads = maps.shape[1]
    cols = st.columns(heads)
    for h, column in enumerate(cols):
        title = t("vision.title_patch", row=row, col=col, layer=layer + 1, head=h + 1)
        fig = figs.attention_overlay(
            result.images[0],
            maps[layer, h],
            c.patch_size,
            title,
            0.6,
            lang,
            f"vision-patch-{h + 1}",
            330,
            (row - 1, col - 1),
            clickable=True,
        )
        show(where=column, fig=fig, filename="vision", key=patch_click_key(f"vpatch{h}"),
             on_select=partial(_patch_clicked, f"vpatch{h}"), selection_mode="points")  # fmt: skip
    st.caption(t("vision.patch_caption", layer=layer + 1))


def weights_section(loaded, lang: str) -> None:
    c = loaded.config
    st.subheader(t("vision.weights_header"), divider="gray")
    left, right = st.columns(2, gap="large")
    pos = loaded.model.positional_embedding.detach().cpu().numpy()[0, int(c.class_token) :]  # (P, D)
    mosaic = similarity_mosaic(position_similarity(pos), c.grid)
    show(where=left, fig=figs.similarity_figure(mosaic, c.grid, lang), filename="vision", key="vsim")
    left.caption(t("vision.similarity_caption"))
    weight = loaded.model.patch_embedding.weight.detach().cpu().numpy()
    comps, explained = filter_components(weight, c.channels, c.patch_size, 14)
    show(where=right, fig=figs.filters_figure(comps, explained, lang), filename="vision", key="vfilters")
    right.caption(t("vision.filters_caption"))


def ablation_section(name, device, loaded, image, result: VisionAnalysis, truth, lang: str) -> None:
    c = loaded.config
    st.subheader(t("vision.ablation_header"), divider="gray")
    labels = view.head_labels(c.num_layers, c.num_heads, lang)
    off = st.multiselect(
        t("vision.switch_off"), list(labels), key="voff", format_func=labels.get, placeholder=t("widgets.choose")
    )
    if not off:
        st.caption(t("vision.ablation_hint"))
        return
    ablated = analyze_vision(name, device, image[None], head_mask_tuple(off, c.num_layers, c.num_heads))
    if c.task == "classification":
        shown = shown_classes(result.probabilities[0])  # the classes of the prediction above, in its order
        names = tuple(c.label_names[k] for k in shown)
        before, after = result.probabilities[0][shown], ablated.probabilities[0][shown]
        fig = figs.probability_bars(before, names, lang, after, "vision-ablation")
        show(fig, filename="vision", key="vablated")
        st.write(t("vision.ablation_result", before=result.label(0), after=ablated.label(0)))
        return
    fig = figs.mask_pair(
        ablated.mask[0], result.mask[0], c.label_names, lang, "vision-ablation", t("vision.mask_all_heads")
    )
    show(fig, filename="vision", key="vablated")
    changed = float((ablated.mask[0] != result.mask[0]).mean())
    st.write(t("vision.ablation_pixels", share=100 * changed))


def downloads_section(loaded, result: VisionAnalysis, device: str) -> None:
    st.subheader(t("vision.downloads_header"), divider="gray")
    arrays = view.download_arrays(result)
    files = {
        t("vision.download_npz"): (partial(arrays_npz, **arrays), "npz"),
        t("vision.download_json"): (partial(analysis_json, loaded, result, 0, device), "json"),
    }
    download_row(f"vision-{loaded.name}", files, key="vdownload")
    st.caption(t("vision.download_caption"))


def main() -> None:
    ensure_shell()
    lang = current_lang()
    st.title(t("vision.title"))
    st.caption(t("vision.intro"))
    picker, notes = st.columns([1, 2], gap="medium")  # side by side: the prediction then fits the first screen
    with picker:
        name, device = choose_model()
    loaded = get_vision(name, device)
    with notes:  # what it is, its held-out numbers, and what an imported model reads
        for text in view.model_texts(loaded, own_pictures_only(loaded), lang):
            st.caption(text)
    source = picture_source(loaded)
    if source == "draw":  # the prediction goes beside the box, on the first screen with the drawing
        image, truth, caption, beside = drawn_image(loaded, lang)
    else:
        (image, truth, caption), beside = choose_image(loaded, lang, source), None
    result = analyze_vision(name, device, np.asarray(image, dtype=np.float32)[None])
    left, right = st.columns([1, 2], gap="large")
    with left:
        show(figs.image_figure(result.images[0], caption), filename="vision", key="vimage")
    with right if beside is None else beside:
        prediction_section(loaded, result, truth, lang, drawn=beside is not None)
    _, layer, _ = overlay_section(loaded, result, lang)
    patch_section(loaded, result, layer, lang)
    weights_section(loaded, lang)
    ablation_section(name, device, loaded, np.asarray(image, dtype=np.float32), result, truth, lang)
    downloads_section(loaded, result, device)


main()
