"""The Vision page's drawing box: offered for the digit model only, and what the browser sends is checked
like an upload before the upload path reads it."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
import streamlit as st
from PIL import Image

from tests.app_helpers import open_app
from transformer.vision.images import MAX_BYTES, ImageError, prepare_image_here
from ui.drawing import BOX_SIDE, STROKE_WIDTH, png_from_data_url, stroke_count


def canvas_png(side: int = BOX_SIDE) -> bytes:
    """A white vertical bar on black, as the box draws a "1"."""
    picture = np.zeros((side, side, 4), dtype=np.uint8)
    picture[..., 3] = 255
    picture[40:240, 130 : 130 + STROKE_WIDTH, :3] = 255
    buffer = io.BytesIO()
    Image.fromarray(picture, "RGBA").save(buffer, "PNG")
    return buffer.getvalue()


def test_the_canvas_data_url_gives_its_png_back_and_the_upload_path_frames_it():
    png = canvas_png()
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    assert png_from_data_url(url) == png
    prepared = prepare_image_here(png_from_data_url(url), 32, 1, digit_style=True)
    assert prepared.array.shape == (1, 32, 32)
    assert "inverted" not in prepared.notes and "cropped" in prepared.notes  # bright ink on black: kept as drawn
    columns = prepared.array[0].mean(axis=0)  # (32,): the bar stands in the middle, nothing beside it
    assert columns[17:19].min() > 0.8 and columns[:13].max() == columns[23:].max() == 0


@pytest.mark.parametrize(
    "value",
    [None, 42, {"objects": []}, "", "data:image/jpeg;base64,AAAA", "data:image/png;base64,not base64!", "hello"],
)
def test_anything_but_a_base64_png_is_refused_as_not_a_picture(value):
    with pytest.raises(ImageError) as err:
        png_from_data_url(value)
    assert err.value.code == "not_image"


def test_a_drawing_over_the_upload_limit_is_refused_before_it_is_decoded():
    url = "data:image/png;base64," + "A" * (4 * (MAX_BYTES // 3 + 2))
    with pytest.raises(ImageError) as err:
        png_from_data_url(url)
    assert err.value.code == "too_big" and err.value.fields["mb"] > 20


def test_strokes_are_counted_from_the_canvas_json_whatever_it_holds():
    assert stroke_count({"objects": [{"type": "path"}, {"type": "path"}]}) == 2
    assert stroke_count({"objects": []}) == 0
    assert stroke_count(None) == stroke_count({"objects": "x"}) == stroke_count(["path"]) == 0


def test_the_draw_source_is_offered_for_the_digit_model_and_waits_for_a_drawing():
    at = open_app("vision")
    assert "Draw" in at.radio(key="vsource").options
    at.radio(key="vsource").set_value("draw").run()
    assert not at.exception and not at.error
    assert [i.value for i in at.info] == ["Draw a digit in the box above."]
    assert at.button(key="vdraw_clear").label == "Clear the drawing"
    assert not at.metric  # nothing predicted before a stroke


def test_the_segmenter_has_no_drawing_box_and_korean_names_it():
    at = open_app("vision", lang="ko")
    assert "그리기" in at.radio(key="vsource").options
    at.selectbox(key="vmodel").set_value("vit-shapes").run()
    assert not at.exception
    assert "그리기" not in at.radio(key="vsource").options


def test_a_drawing_is_read_like_an_upload_and_predicted_without_the_canvas_notes(monkeypatch):
    """The canvas itself needs a browser (tests/test_vision_drawing_browser.py); here the box hands the
    page what the canvas sends: the data URL of a drawn "1"."""
    import ui.drawing

    url = "data:image/png;base64," + base64.b64encode(canvas_png()).decode()
    monkeypatch.setattr(ui.drawing, "drawing_box", lambda help_text: (url, st.container()))
    at = open_app("vision")
    at.radio(key="vsource").set_value("draw").run()
    assert not at.exception and not at.error
    assert at.metric[0].value == "1"
    assert any(c.value.startswith("Top 3: **1**") for c in at.caption)
    captions = " ".join(c.value for c in at.caption)
    assert "Read a 280 × 280 picture" in captions
    assert "transparency" not in captions and "Colour was turned into grey" not in captions


def test_a_drawing_unlike_the_training_digits_gets_a_note_not_the_no_digit_warning(monkeypatch):
    """A digit was meant in the box: a drawing the "not a digit" rule flags gets a note to look at the top
    3 (in Korean too), never the upload's warning that it looks like nothing the model knows."""
    from PIL import ImageDraw

    import ui.drawing

    picture = Image.new("RGBA", (BOX_SIDE, BOX_SIDE), "black")
    pen = ImageDraw.Draw(picture)
    # a smiley: far from every training digit (an X, used before, sits at the rule's threshold since
    # pen-written digits joined its fit)
    pen.ellipse([30, 30, 250, 250], outline="white", width=STROKE_WIDTH)
    pen.ellipse([85, 90, 115, 120], fill="white")
    pen.ellipse([165, 90, 195, 120], fill="white")
    pen.arc([80, 110, 200, 210], 20, 160, fill="white", width=20)
    buffer = io.BytesIO()
    picture.save(buffer, "PNG")
    url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
    monkeypatch.setattr(ui.drawing, "drawing_box", lambda help_text: (url, st.container()))
    for lang, note, warning in (
        ("en", "Drawn strokes look different", "does not look like anything"),
        ("ko", "그린 획은 모델이 배운 손글씨 숫자와 모양이 다릅니다", "어떤 것과도 닮지 않았습니다"),
    ):
        at = open_app("vision", lang=lang)
        at.radio(key="vsource").set_value("draw").run()
        assert not at.exception and not at.error
        assert any(note in i.value for i in at.info), [i.value for i in at.info]
        assert not any(warning in w.value for w in at.warning)
