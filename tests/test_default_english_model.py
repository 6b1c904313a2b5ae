"""English sessions start on the sentiment model fine-tuned on the real encoder (it met issue 37's bar: IMDB test
0.895, SST-2 validation 0.887 above TF-IDF's 0.792, the negation probes right); Korean ones on nsmc-sentiment;
a server can start English sessions on the course model instead."""

from __future__ import annotations

from tests.app_helpers import figures, open_app
from ui.models import DEFAULT_ENGLISH_ENV, default_model


def test_english_starts_on_minilm_sentiment_and_korean_on_nsmc(monkeypatch):
    monkeypatch.delenv(DEFAULT_ENGLISH_ENV, raising=False)
    assert default_model("en") == "minilm-sentiment"
    assert default_model("ko") == "nsmc-sentiment"
    monkeypatch.setenv(DEFAULT_ENGLISH_ENV, "imdb-sentiment")
    assert default_model("en") == "imdb-sentiment" and default_model("ko") == "nsmc-sentiment"
    monkeypatch.setenv(DEFAULT_ENGLISH_ENV, "no-such-model")
    assert default_model("en") == "imdb-sentiment"  # a name with no folder falls back to the course model


def test_the_first_thing_a_class_types_is_read_right(monkeypatch):
    monkeypatch.delenv(DEFAULT_ENGLISH_ENV, raising=False)
    at = open_app("playground", lang="en", text="not bad at all\nthe movie was not good")
    assert at.session_state["selection"].model_key == "minilm-sentiment"
    assert list(at.dataframe[0].value["prediction"]) == ["positive", "negative"]


def test_every_text_page_runs_on_the_default(monkeypatch):
    """Each English text page opens on minilm-sentiment without an error; the Classifier shows its reliability
    diagram (its temperature fitted on validation at the length it reads)."""
    monkeypatch.delenv(DEFAULT_ENGLISH_ENV, raising=False)
    for page in ("classifier", "attention", "masks", "positional_encoding"):
        at = open_app(page, lang="en", text="not bad at all")
        assert at.session_state["selection"].model_key == "minilm-sentiment"
        assert not at.error, [e.value for e in at.error]
        if page == "classifier":
            assert "reliability" in figures(at)
