"""Where the Vision page's picture comes from: a test picture, a random one, an upload, the camera, a
drawing or a made-up scene (widgets; the page lays them out). Each returns the picture (C, H, W), its
truth (class id, mask or None) and a caption; a source that has no picture yet says what to do and stops
the page."""

from __future__ import annotations

import numpy as np
import streamlit as st

from transformer.vision.images import ImageError

from . import drawing, session
from . import vision_view as view
from .drawing import DRAWING_NOTES_UNSAID, png_from_data_url, takes_drawings
from .i18n import current_lang, t
from .steps import bounded_slider
from .vision_models import (
    MODEL_NOTES,
    digit_test_set,
    image_error_text,
    note_texts,
    own_pictures_only,
    read_upload,
    scene,
    shape_kinds,
    test_scene_seed,
)
from .vision_upload import NOTE_KEYS
from .widget_text import uploader_note_css


def keep_valid(key: str, options) -> None:
    """Forget a widget's value that is no longer among its options (another model was chosen)."""
    chosen = session.value(key)
    if chosen.is_set and chosen.get() not in options:
        chosen.pop()


def _next_seed() -> None:
    session.RANDOM_PICTURE_SEED.count_up()


def picture_source(loaded) -> str:
    """The source radio: "test", "random", "upload", "camera", "draw" or "scene" (those that fit the model)."""
    own = own_pictures_only(loaded)
    sources = view.picture_sources(loaded.config.task == "segmentation", takes_drawings(loaded), own)
    for note in loaded.notes if own else ():  # an upload or import: what was assumed about its pictures
        if note in NOTE_KEYS or note in MODEL_NOTES:
            st.caption(t(NOTE_KEYS.get(note) or MODEL_NOTES[note]))
    labels = view.names("source_", view.SOURCES, current_lang())
    keep_valid("vsource", sources)
    return st.radio(
        t("vision.source"), sources, key="vsource", horizontal=True, format_func=labels.get, bind="query-params"
    )


def choose_image(loaded, lang: str, source: str) -> tuple[np.ndarray, np.ndarray | int | None, str]:
    """The picture (C, H, W) from ``source`` (any but "draw": see :func:`drawn_image`), its truth (class id,
    mask or None) and a caption."""
    segmenter = loaded.config.task == "segmentation"
    if source == "upload":
        return uploaded_image(loaded, lang)
    if source == "camera":
        return camera_image(loaded, lang)
    if source == "scene":
        return scene_image()
    if source == "random":
        st.button(t("vision.another"), key="vrandom_next", on_click=_next_seed)
        seed = session.RANDOM_PICTURE_SEED.get(0)
        if segmenter:
            s = scene(1_000_000 + seed)
            return s.image, s.mask, t("vision.caption_random", n=seed + 1)
        images, labels_ = digit_test_set()
        index = int(np.random.default_rng(seed).integers(len(labels_)))
        return images[index], int(labels_[index]), t("vision.caption_test", n=index + 1)
    return test_image(loaded, segmenter)


def test_image(loaded, segmenter: bool):
    if segmenter:
        index = st.slider(t("vision.test_scene"), 1, 60, 1, key="vscene_index", bind="query-params")
        s = scene(test_scene_seed(index - 1))
        return s.image, s.mask, t("vision.caption_scene", n=index)
    images, labels = digit_test_set()
    c1, c2 = st.columns(2)
    names = list(loaded.config.label_names)
    label = c1.selectbox(t("vision.digit_class"), names, key="vdigit", bind="query-params")
    members = np.flatnonzero(labels == names.index(label))
    if members.size == 0:  # a model whose classes are not the test set's digits
        members = np.arange(len(labels))
    which = bounded_slider(c2, t("vision.digit_index"), 1, len(members), 1, key="vdigit_index")
    index = int(members[min(which, len(members)) - 1])
    return images[index], int(labels[index]), t("vision.caption_test", n=index + 1)


def scene_image():
    c1, c2 = st.columns([3, 1])
    names = view.names("shape_", view.SHAPES, current_lang())
    kinds = c1.multiselect(
        t("vision.scene_shapes"),
        list(shape_kinds()),
        default=["circle", "square"],
        placeholder=t("widgets.choose"),
        key="vkinds",
        format_func=names.get,
        max_selections=3,
    )
    seed = c2.number_input(t("vision.scene_seed"), 0, 9999, 0, key="vscene_seed")
    s = scene(int(seed), tuple(kinds))
    return s.image, s.mask, t("vision.caption_made", shapes=", ".join(names[k] for k in kinds) or "—")


def uploaded_image(loaded, lang: str):
    types = ["png", "jpg", "jpeg", "gif", "bmp", "webp"]
    file = st.file_uploader(t("vision.upload"), type=types, key="vupload")
    note = uploader_note_css("vupload", lang, st.get_option("server.maxUploadSize"), types)
    if note:  # Streamlit writes this uploader's note in English only: the session's language instead
        st.html(f"<style>{note}</style>")
    if file is None:
        st.info(t("vision.upload_hint"))
        st.stop()
    return prepared_picture(file.getvalue(), file.name, loaded, lang)


def camera_image(loaded, lang: str):
    """A photo from the device's camera (a digit on paper, say), read like an upload."""
    photo = st.camera_input(t("vision.camera"), key="vcamera", help=t("vision.camera_help"))
    if photo is None:
        st.info(t("vision.camera_hint"))
        st.stop()
    return prepared_picture(photo.getvalue(), t("vision.camera_name"), loaded, lang)


def drawn_image(loaded, lang: str):
    """A digit drawn with the mouse or a finger, read like an upload: (picture, truth None, caption, the
    container beside the box for the prediction)."""
    url, beside = drawing.drawing_box(t("vision.draw_help"))  # looked up at each call: tests draw in it
    if url is None:
        st.info(t("vision.draw_hint"))
        st.stop()
    try:
        data = png_from_data_url(url)
    except ImageError as err:
        st.error(image_error_text(err, lang))
        st.stop()
    return (*prepared_picture(data, t("vision.draw_name"), loaded, lang, DRAWING_NOTES_UNSAID), beside)


def prepared_picture(data: bytes, name: str, loaded, lang: str, unsaid: tuple[str, ...] = ()):
    """An uploaded, photographed or drawn picture as the model's input, with what was converted
    (but the conversions named in ``unsaid``)."""
    try:
        prepared = read_upload(data, loaded)
    except ImageError as err:
        st.error(image_error_text(err, lang))
        st.stop()
    w, h = prepared.original_size
    notes = note_texts(tuple(n for n in prepared.notes if n not in unsaid), lang)
    st.caption(t("vision.upload_done", w=w, h=h, mode=prepared.original_mode, size=loaded.config.image_size))
    for note in notes:
        st.caption("• " + note)
    return prepared.array, None, t("vision.caption_upload", name=name)
