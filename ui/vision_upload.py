"""Course-style ViT checkpoints uploaded on the Checkpoints page, used on the Vision page.

The notebook's ``ViT`` / ``ViTSegmentation`` weights are recognised by their names when the upload
is read (a ``CourseViTUpload`` from ``transformer.checkpoints.recognise_upload``); the user answers what the weights cannot
say (heads, channels, class names) and the model is kept in this browser session only.
"""

from __future__ import annotations

import streamlit as st
import torch

from transformer.checkpoints import CourseViTUpload
from transformer.checkpoints.uploads import safe_file_name
from transformer.vision.bundle import VisionModel
from transformer.vision.course_import import import_course_vit, infer_config

from . import session
from .echo import cut_to_limit
from .i18n import t
from .upload_memory import budget_error, held_bytes

MAX_VISION_UPLOADS = 3
OUTCOME = session.value("vision_upload_outcome")  # (file name, "success" | "error", message, notes)
# what import_course_vit assumed, in the user's words
NOTE_KEYS = {
    "batch_first": "vision_upload.note_batch_first",
    "patch_order_chw": "vision_upload.note_patch_order",
    "post_norm_relu": "vision_upload.note_post_norm",
    "segmentation_upsample_nearest": "vision_upload.note_upsample",
    "channels_3": "vision_upload.note_channels",
    "label_names_numbered": "vision_upload.note_numbered",
}


def vision_uploads() -> dict[str, VisionModel]:
    """This session's uploaded vision models by display name (``upload: <file>``), from its one registry."""
    return session.uploads_of(VisionModel)


def heads_dividing(d_model: int) -> list[int]:
    """Head counts that split ``d_model`` evenly."""
    return [h for h in range(1, min(d_model, 64) + 1) if d_model % h == 0]


def vision_upload_form(name: str, state: dict[str, torch.Tensor], hints: dict) -> None:
    """Ask what the weights cannot say, then keep the model for the Vision page."""
    st.success(t("vision_upload.recognised"))
    d_model = int(state["patch_embedding.weight"].shape[0])
    options = heads_dividing(d_model)
    hinted = int(hints.get("num_heads", hints.get("nhead", 4)) or 4)
    left, middle, right = st.columns(3)
    heads = left.selectbox(
        t("vision_upload.heads"), options, index=options.index(hinted) if hinted in options else 0, key="vu_heads"
    )
    channels = middle.selectbox(t("vision_upload.channels"), [3, 1], key="vu_channels")
    # no max_chars (the browser would keep the old text in silence on a longer paste): cut here, said
    labels_text, cut = cut_to_limit(right.text_input(t("vision_upload.labels"), key="vu_labels") or "", 2000)
    if cut:
        right.warning(cut)
    labels = tuple(x.strip() for x in labels_text.split(",") if x.strip()) or None
    try:
        config = infer_config(state, int(heads), int(channels))
    except ValueError as err:
        st.error(t("vision_upload.does_not_fit", reason=str(err)))
        return
    if labels is not None and len(labels) != len(config.label_names):
        st.error(t("vision_upload.label_count", given=len(labels), classes=len(config.label_names)))
        return
    st.caption(
        t(
            "vision_upload.summary",
            size=config.image_size,
            patch=config.patch_size,
            layers=config.num_layers,
            d_model=config.d_model,
            classes=len(config.label_names),
        )
    )
    st.button(
        t("vision_upload.use"),
        type="primary",
        key="vu_use",
        on_click=_use,
        args=(name, int(heads), int(channels), labels),  # the weights stay in the state, not in the widget
    )
    outcome = OUTCOME.get()
    if outcome and outcome[0] == name:
        _show_outcome(*outcome[1:])


def _use(name: str, heads: int, channels: int, labels: tuple[str, ...] | None) -> None:
    """Button callback (runs before the page, so no rerun can lose the click): import and keep.
    The weights come from the Checkpoints page's file being recognised (a widget keeps its
    callback's arguments as long as the session lives: weights there would outlive their release)."""
    pending = session.pending_upload() or {}
    if pending.get("name") != name or not isinstance(pending.get("result"), CourseViTUpload):
        return
    state = pending["result"].state
    uploads = vision_uploads()
    key = session.upload_key(safe_file_name(name))
    if key not in uploads and len(uploads) >= MAX_VISION_UPLOADS:
        OUTCOME.set((name, "error", t("vision_upload.too_many", limit=MAX_VISION_UPLOADS), ()))
        return
    try:
        model = import_course_vit(state, heads, channels, labels, key)
    except (ValueError, RuntimeError) as err:
        OUTCOME.set((name, "error", t("vision_upload.does_not_fit", reason=str(err)), ()))
        return
    replaced = session.uploads().get(key)
    need = held_bytes(model) - (held_bytes(replaced) if replaced is not None else 0)
    message = budget_error(need)  # weights count against this session's and the server's upload budgets
    if message is not None:
        OUTCOME.set((name, "error", message, ()))
        return
    session.add_upload(key, model)
    OUTCOME.set((name, "success", t("vision_upload.stored", key=key), model.notes))


def _show_outcome(kind: str, message: str, notes: tuple[str, ...]) -> None:
    (st.success if kind == "success" else st.error)(message)
    for note in notes:
        if note in NOTE_KEYS:
            st.caption(t(NOTE_KEYS[note]))
    if kind == "success":
        st.page_link("pages/vision.py", label=t("vision_upload.open_vision"), icon="➡️")
