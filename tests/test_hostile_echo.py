"""What a user typed, written back by the Playground, Attention, Classifier and Similarity pages, is shown
as typed: never as Markdown (an image the browser fetches, bold, LaTeX, a colour directive), and a long
text is not echoed whole (issue 50, item 8)."""

from __future__ import annotations

import re

import pytest

from .app_helpers import open_app

HOSTILE = "![i](http://example.invalid/x.png) **bold** $x^2$ :red[red] <img src=x>"
# markup that would render: an image, bold, LaTeX, a colour directive, raw HTML (not preceded by a backslash)
LIVE = re.compile(r"(?<!\\)!\[i\]|(?<!\\)\*\*bold|(?<!\\)\$x|(?<![\\]):red\[|(?<!\\)<img")


def written(at) -> list[str]:
    """Every text the page wrote as Markdown (markdown, captions, alerts), main area and sidebar."""
    kinds = ("markdown", "caption", "warning", "info", "error", "success")
    return [el.value for kind in kinds for el in at.get(kind)]


@pytest.mark.parametrize("page", ["playground", "attention", "classifier"])
def test_typed_markup_is_shown_as_typed(page):
    at = open_app(page, text=f"the movie was great {HOSTILE}")
    live = [text for text in written(at) if LIVE.search(text)]
    assert not live, live


def test_a_long_text_is_not_echoed_whole():
    long = "the movie was great " * 5_000  # 100,000 characters
    at = open_app("playground", text=long)
    echoed = [text for text in written(at) if long[:2_000] in text]  # the token chips are bounded by the model
    assert not echoed, [text[:80] for text in echoed]


def test_similarity_writes_sentences_back_as_typed():
    at = open_app("similarity")
    at.text_area(key="sim_text").set_value(f"A cat sleeps. {HOSTILE}\nThe dog runs.").run()
    live = [text for text in written(at) if LIVE.search(text)]
    assert not live, live
