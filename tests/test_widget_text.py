"""Streamlit's own widget texts in Korean: the uploader's button and note (CSS), the multiselect placeholder."""

from __future__ import annotations

from tests.app_helpers import open_app
from ui.widget_text import uploader_note_css, widget_text_css


def test_korean_uploader_css_writes_the_button_and_the_note_in_korean():
    css = widget_text_css("ko")
    assert '"파일 찾기"' in css and '"파일을 여기에 끌어다 놓으세요"' in css and "font-size: 0" in css
    assert widget_text_css("en") == ""  # Streamlit's own English stays
    note = uploader_note_css("vupload", "ko", 200, ["png", "jpg"])
    assert note.startswith(".st-key-vupload ") and '"파일당 200MB까지 • PNG, JPG"' in note
    assert uploader_note_css("vupload", "en", 200, ["png"]) == ""


def test_korean_pages_get_the_css_and_korean_placeholders():
    at = open_app("translate", lang="ko")
    styles = "\n".join(el.proto.body for el in at.get("html"))
    assert "파일 찾기" in styles
    assert at.multiselect(key="tr_heads_off").placeholder == "골라 주세요"
