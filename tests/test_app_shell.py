"""AppTest of the shell: navigation, the shared sidebar, one sentence for every page, the URL, the theme."""

from __future__ import annotations

import tomllib

import pytest
import torch

from transformer import ModelConfig
from ui.figures.common import token_labels
from ui.models import Selection
from ui.text import DEFAULT_TEXT

from .app_helpers import ROOT, figures, open_app, texts


def test_sidebar_offers_models_devices_and_a_maximum_length():
    at = open_app(None)
    assert "imdb-sentiment" in at.selectbox(key="model").options
    device = at.radio(key="device")
    assert device.options == ["Auto", "CPU", "CUDA"] and device.value == "Auto"
    assert len(device.proto.captions) == 3 and device.proto.captions[1] == "available"
    bundled = ModelConfig.load(ROOT / "assets" / "models" / "imdb-sentiment" / "config.json")
    assert at.slider(key="max_len").max == bundled.max_len  # the model's longest input
    assert at.slider(key="max_len").value == bundled.default_max_tokens  # the length chosen on validation
    selection = at.session_state["selection"]
    assert isinstance(selection, Selection) and selection.device in ("cpu", "cuda", "mps")
    assert selection.max_len == at.slider(key="max_len").value
    assert at.text_area(key="text").value == DEFAULT_TEXT


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here, so it is not shown as missing")
def test_missing_cuda_is_shown_with_why_and_the_cpu_is_used():
    at = open_app(None)
    assert at.radio(key="device").proto.captions[2].startswith("not available: ")
    at.radio(key="device").set_value("CUDA").run()
    assert any("CUDA is not available" in w and "using the CPU" in w for w in texts(at.sidebar.warning))
    assert at.session_state["selection"].device == "cpu"
    assert at.dataframe  # the page still runs, on the CPU


def test_sentence_and_sidebar_choices_hold_across_pages():
    at = open_app(None)
    at.text_area(key="text").input("the acting was great\nthe ending was bad").run()
    at.slider(key="max_len").set_value(3).run()
    at.radio(key="device").set_value("CPU").run()
    at.switch_page("pages/attention.py").run()
    assert not at.exception
    assert at.text_area(key="text").value == "the acting was great\nthe ending was bad"
    assert at.slider(key="max_len").value == 3 and at.radio(key="device").value == "CPU"
    assert figures(at)["attention-heatmap"]["data"][0]["y"] == token_labels(["the", "acting", "was"])
    at.selectbox(key="sentence").select(1).run()
    at.switch_page("pages/playground.py").run()
    assert at.text_area(key="text").value == "the acting was great\nthe ending was bad"
    assert at.dataframe[0].value["tokens"].tolist() == [3, 3]


def test_url_prefills_the_sentence_model_and_length():
    at = open_app("attention", text="a dull film", model="imdb-sentiment", max_len="2")
    assert at.text_area(key="text").value == "a dull film"
    assert at.selectbox(key="model").value == "imdb-sentiment" and at.slider(key="max_len").value == 2
    assert figures(at)["attention-heatmap"]["data"][0]["y"] == token_labels(["a", "dull"])


@pytest.mark.parametrize("query", [{"max_len": "lots"}, {"model": "no-such-model"}, {"layer": "99", "head": "-1"}])
def test_bad_url_values_are_ignored(query):
    at = open_app("attention", text="a dull film", **query)
    assert at.session_state["selection"].model_key == "imdb-sentiment"
    assert figures(at)["attention-heatmap"]["layout"]["title"]["text"] == "Layer 1, head 1"


def _luminance(hex_colour: str) -> float:
    """WCAG relative luminance of '#RRGGBB'."""
    channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_theme_reads_on_a_projector_and_the_toolbar_is_for_viewers():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    theme, client = config["theme"], config["client"]
    assert theme["base"] == "light" and theme["baseFontSize"] >= 16
    # WCAG AAA (7:1) for body text on both backgrounds; AA (4.5:1) for the accent colour.
    assert _contrast(theme["textColor"], theme["backgroundColor"]) >= 7
    assert _contrast(theme["textColor"], theme["secondaryBackgroundColor"]) >= 7
    assert _contrast(theme["primaryColor"], theme["backgroundColor"]) >= 4.5
    assert client["toolbarMode"] == "viewer" and client["showErrorDetails"] == "none"


def test_language_from_the_address_then_the_switch_kept_across_pages():
    at = open_app("attention", lang="ko")
    assert at.radio(key="lang_switch").value == "한국어"
    assert at.selectbox(key="model").label == "모델" and at.radio(key="device").options[0] == "자동"
    at.radio(key="device").set_value("CPU").run()
    at.radio(key="lang_switch").set_value("English").run()
    assert at.query_params["lang"] in (["en"], "en")
    assert at.selectbox(key="model").label == "Model"
    assert at.radio(key="device").value == "CPU"  # the device choice survives the change of language
    at.switch_page("pages/playground.py").run()
    assert not at.exception
    assert at.query_params["lang"] in (["en"], "en")  # a link shared from this page keeps the language
    assert at.radio(key="lang_switch").value == "English" and at.selectbox(key="model").label == "Model"


def test_session_language_is_used_when_the_address_has_none():
    at = open_app(None, lang="ko")
    del at.query_params["lang"]
    at.run()
    assert at.radio(key="lang_switch").value == "한국어"
    assert at.slider(key="max_len").label == "최대 길이 (토큰 수)"


def test_page_icon_is_an_emoji_not_a_font_server_icon():
    source = (ROOT / "streamlit_app.py").read_text(encoding="utf-8")
    config = source[source.index("st.set_page_config(") :]
    config = config[: config.index(")\n")]
    assert 'page_icon=":material' not in config and "page_icon=" in config


def test_the_share_box_reruns_alone_and_links_the_address_as_it_is_then(monkeypatch):
    """A fragment elsewhere (Attention's controls) can change a URL-bound widget without a full run:
    the share box, a fragment rerun when its popover opens, builds the link from the address at that
    moment, and draws the QR code only then."""
    import urllib.parse

    from .test_page_masks import run_fragment

    at = open_app("attention", text="the movie was great")
    before = at.sidebar.get("code")[-1].value
    assert "layer=3" not in before and not at.sidebar.get("image")  # closed: no QR code drawn
    at.query_params["layer"] = "3"
    at.session_state["share_popover"] = True  # the user opens the box
    run_fragment(at, "share_panel", monkeypatch)
    assert not at.get("plotly_chart") and not at.selectbox  # only the share box ran again
    link = at.sidebar.get("code")[-1].value
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)["layer"] == ["3"]
    assert at.sidebar.get("image")


def test_qr_codes_are_drawn_once_per_address(monkeypatch):
    import ui.share as share

    drawn = []
    real = share.qr_png
    monkeypatch.setattr(share, "qr_png", lambda url: drawn.append(url) or real(url))
    first, second = (
        "http://host:8501/masks?text=qr%20cache%20test%201",
        "http://host:8501/masks?text=qr%20cache%20test%202",
    )
    png = share.cached_qr_png(first)
    assert png == share.cached_qr_png(first) == real(first) and drawn == [first]
    other = share.cached_qr_png(second)
    assert other != png and drawn == [first, second]


def test_a_page_run_without_the_entry_script_reruns_once_then_draws(monkeypatch):
    """A fresh server's first concurrent visitors can get a page run alone, without the sidebar;
    the page asks for one rerun (which then goes through the entry script). Run alone for good (as
    here), it reruns once only and is still drawn, never looping."""
    from streamlit.testing.v1 import AppTest

    import ui.navigation as nav

    reruns = []
    real_rerun = nav.st.rerun
    monkeypatch.setattr(nav.st, "rerun", lambda *a, **k: (reruns.append(1), real_rerun(*a, **k)))
    at = AppTest.from_file(str(ROOT / "pages" / "playground.py"), default_timeout=90).run()
    assert not at.exception
    assert texts(at.info) == ["Choose a model in the sidebar to begin."]  # drawn: no sidebar, no selection
    assert len(reruns) == 1
    at.run()
    assert len(reruns) == 1  # the mark stays: no rerun on every later run of a lone page
