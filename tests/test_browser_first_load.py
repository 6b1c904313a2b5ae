"""Real browser, fresh server: the first visit never shows Streamlit's own page list of the pages/ folder
("streamlit app, attention, ...") before the app's navigation. Screenshots every 200 ms go to
``test-artifacts/first-load-<n>.png`` (the first ten)."""

from __future__ import annotations

import time

from tests import browser_server
from tests.browser_server import ARTIFACTS, chromium_page, needs_chromium

pytestmark = needs_chromium
server_url = browser_server.server_url  # a fresh server for this test: its first visitor is this one

LINKS = """() => [...document.querySelectorAll('[data-testid="stSidebar"] a')].map(a => a.innerText.trim())"""


def test_the_first_visit_shows_only_the_apps_navigation(server_url):
    with chromium_page(timeout_ms=None) as page:
        page.goto(f"{server_url}/?lang=en", wait_until="commit", timeout=180_000)
        seen, deadline = [], time.monotonic() + 180
        while time.monotonic() < deadline:
            time.sleep(0.2)
            links = page.evaluate(LINKS)
            if len(seen) < 10:
                page.screenshot(path=str(ARTIFACTS / f"first-load-{len(seen)}.png"))
            seen.append(links)
            if any("Start" in link for link in links):
                break
        shown = {link for links in seen for link in links}
        assert any("Start" in link for link in shown), "the app's navigation never showed"
        folder_names = {"streamlit app", "attention", "classifier", "playground"}
        assert not folder_names & {link.lower() for link in shown}, f"the pages/ folder's list showed: {shown}"
