"""The Generate page's continuation: model text never becomes markup, the new tokens are marked
(issue 40, item 2: "The acting was great**, and the movie … a**")."""

from __future__ import annotations

import re
from html import unescape

import pytest

from tests.app_helpers import open_app
from ui.continuation import NEW_TOKENS_CLASS, continuation_html

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
MARKED = re.compile(rf'<span class="{NEW_TOKENS_CLASS}"[^>]*>(.*?)</span>', re.S)


def shown_text(html: str) -> str:
    """What a reader sees: the tags dropped, entities read."""
    return unescape(re.sub(r"<[^>]+>", "", html))


def marked_text(html: str) -> str | None:
    """The text of the marked new tokens in ``html`` as a reader sees it; None when nothing is marked."""
    found = MARKED.search(html)
    return unescape(found.group(1)) if found else None


def test_a_continuation_starting_with_punctuation_is_marked_without_stars():
    html = continuation_html("The acting was great", ", and the movie was a")
    assert shown_text(html) == "The acting was great, and the movie was a"
    assert "**" not in html
    assert marked_text(html) == ", and the movie was a"


def test_model_text_cannot_open_or_close_the_marking():
    written = "**x** </span><b>bold</b> :red[y] <script>alert(1)</script>"
    html = continuation_html("a <i>prompt</i>", written)
    assert html.count("<span") == 1 and html.count("</span>") == 1
    assert "<b>" not in html and "<script>" not in html and "<i>" not in html
    assert shown_text(html) == "a <i>prompt</i>" + written
    assert marked_text(html) == written


def test_nothing_written_has_no_marked_span():
    html = continuation_html("The end", "")
    assert NEW_TOKENS_CLASS not in html and shown_text(html) == "The end"


def test_generate_page_marks_a_continuation_that_starts_with_a_comma():
    at = open_app("generate", gen_prompt="The acting was great")
    blocks = [h.value for h in at.get("html") if NEW_TOKENS_CLASS in h.value]
    assert len(blocks) == 1
    html = blocks[0]
    new = marked_text(html)
    assert shown_text(html) == "The acting was great" + new
    assert new[:1] in ",.;:!?-'\"" and new.strip()  # the bundled model goes on with punctuation
    assert "**" not in shown_text(html)
    assert not any("great**" in m.value for m in at.markdown)  # not drawn a second time as markdown
