"""The Vision page's drawing box: a digit drawn with the mouse or a finger, read like an uploaded picture.

The box is ``streamlit-drawable-canvas`` (a components-v2 component, its JavaScript in the wheel).
It draws white strokes on black, as the digit model's training digits are, so the upload path
(:func:`transformer.vision.images.prepare_image`) only crops and frames the ink. What the browser
sends back is a ``data:image/png;base64,…`` string: untrusted like any upload, so it is checked
here (a string, a base64 PNG, no larger than the upload limit) before the upload path reads it.
"""

from __future__ import annotations

import base64
import binascii

import streamlit as st

from transformer.vision.images import MAX_BYTES, ImageError

from . import session
from .i18n import t

BOX_SIDE = 280  # CSS pixels: large enough for a finger, small enough to leave the prediction on the first screen
# a tenth of a digit drawn across the box; chosen with bench/bench_drawn_digits.py --offline on its 50
# drawings: 12 px 0.74, 20 px 0.88, 24 px 0.90, 28 px 0.96, 32 px 0.94 right
STROKE_WIDTH = 28
INK, PAPER = "#ffffff", "#000000"  # bright strokes on black, as the digit model learned them
TOOLBAR_ROOM = 28  # px above the box: the canvas's own toolbar (undo, redo, edit, reset) floats 2.65rem over its top
CLEARS = session.value("_vdraw_clears")  # times the box was cleared: a new canvas key each time
# the canvas always sends an opaque RGBA colour PNG: its "transparency" and "colour to grey" steps change
# nothing and would only puzzle a student, so the page leaves those notes out for a drawing
DRAWING_NOTES_UNSAID = ("alpha", "grey")
PNG_PREFIX = "data:image/png;base64,"


def takes_drawings(loaded) -> bool:
    """Whether a model reads hand-drawn digits: a bundled one-channel classifier (the digit model)."""
    from .vision_models import own_pictures_only

    return not own_pictures_only(loaded) and loaded.config.task == "classification" and loaded.config.channels == 1


def png_from_data_url(url) -> bytes:
    """The PNG bytes of the canvas's ``data:image/png;base64,…`` string; raises ImageError for
    anything else (a client can send any value) or for more than the upload limit."""
    if not isinstance(url, str) or not url.startswith(PNG_PREFIX):
        raise ImageError("not_image", "The drawing did not arrive as a PNG picture.")
    encoded = url[len(PNG_PREFIX) :]
    if len(encoded) > 4 * (MAX_BYTES // 3 + 1):  # checked before decoding
        mb = 3 * len(encoded) / 4 / 1e6
        raise ImageError("too_big", f"The file is {mb:.1f} MB; the limit is 20 MB.", mb=mb)
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as err:
        raise ImageError("not_image", "The drawing did not arrive as a PNG picture.") from err


def stroke_count(drawing) -> int:
    """The number of strokes in the canvas's Fabric.js JSON (0 for anything that is not one)."""
    objects = drawing.get("objects") if isinstance(drawing, dict) else None
    return len(objects) if isinstance(objects, list) else 0


def _clear() -> None:
    CLEARS.count_up()


def drawing_box(help_text: str):
    """The box, with ``help_text`` and the clear button beside it. Returns (the drawing as the canvas's
    data URL, or None while it is empty; the container beside the box, under the button, where the page
    puts the prediction so that it is on the first screen with the drawing)."""
    from streamlit_drawable_canvas import st_canvas

    row = st.container(horizontal=True, gap="large")  # the words wrap under the box on a narrow screen
    box, words = row.container(width=BOX_SIDE), row.container(width="stretch")
    with box:
        st.space(TOOLBAR_ROOM)
        drawn = st_canvas(
            stroke_width=STROKE_WIDTH,
            stroke_color=INK,
            background_color=PAPER,
            height=BOX_SIDE,
            width=BOX_SIDE,
            drawing_mode="freedraw",
            return_image_data=True,
            key=f"vdraw_{CLEARS.get(0)}",
        )
    words.caption(help_text)
    words.button(t("vision.draw_clear"), key="vdraw_clear", on_click=_clear, icon=":material/ink_eraser:")
    if stroke_count(drawn.json_data) == 0:
        return None, words
    return drawn._image_data_url, words  # the raw string (the pinned 0.13.0's slot), checked before it is decoded
