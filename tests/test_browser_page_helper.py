"""The browser tests' shared page (tests/browser_server.chromium_page), without a server: its size, its default
wait, a screenshot kept when the block fails, and a second page of the same browser."""

from __future__ import annotations

import pytest

from tests import browser_server
from tests.browser_server import chromium_page, needs_chromium

pytestmark = needs_chromium


def test_the_page_has_its_size_and_wait_and_a_failure_leaves_a_screenshot(tmp_path, monkeypatch):
    monkeypatch.setattr(browser_server, "ARTIFACTS", tmp_path)
    with chromium_page(800, 600, timeout_ms=1_000, locale="ko-KR") as page:
        page.set_content("<h1>attention</h1>")
        assert page.viewport_size == {"width": 800, "height": 600}
        assert page.evaluate("navigator.language") == "ko-KR" and page.inner_text("h1") == "attention"
        other = page.context.browser.new_page()
        assert other.evaluate("1 + 1") == 2
        with pytest.raises(Exception, match="1000ms"):
            page.wait_for_selector("h2")  # the default wait given, not playwright's 30 s
    with pytest.raises(AssertionError, match="on purpose"):
        with chromium_page(failure_shot="failed.png") as page:
            page.set_content("<p>a failing check</p>")
            raise AssertionError("on purpose")
    assert (tmp_path / "failed.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
