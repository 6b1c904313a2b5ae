"""Real browser: the figures are the controls. Clicking a cell of the Masks page's mask switches it (and a
second click switches it back); clicking a patch of the Vision picture makes it the patch whose attention
is shown. (Clicking a head's thumbnail on the Attention page: tests/test_browser_layout.py.)"""

from __future__ import annotations

import time
import urllib.parse

from tests import browser_server
from tests.browser_server import ARTIFACTS, chromium_page, needs_chromium, poll, settle

pytestmark = needs_chromium
server_url = browser_server.server_url  # the fixture, under the name the tests ask for

# Page coordinates of the click target (a transparent marker) whose customdata starts with ``first``.
TARGET = """([meta, name, first]) => {
  const gd = [...document.querySelectorAll('.js-plotly-plot')].find(p => p.layout && p.layout.meta === meta);
  if (!gd) return null;
  const t = gd._fullData.findIndex(d => d.name === name);
  if (t < 0) return null;
  const i = gd._fullData[t].customdata.findIndex(c => c[0] === first[0] && c[1] === first[1]);
  gd.scrollIntoView({block: "center"});  // a click lands only on what is on the screen
  const cd = gd.calcdata[t][i];
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  const box = gd.getBoundingClientRect();
  return {x: box.left + xa._offset + xa.l2p(cd.x), y: box.top + ya._offset + ya.l2p(cd.y)};
}"""
OUTLINES = """(meta) => {
  const gd = [...document.querySelectorAll('.js-plotly-plot')].find(p => p.layout && p.layout.meta === meta);
  return gd ? (gd.layout.shapes || []).map(s => [s.x0, s.y0]) : null;
}"""


def click(page, meta: str, name: str, first: list[int]) -> None:
    point = poll(page, TARGET, bool, timeout=120, arg=[meta, name, first])
    assert point, f"no click target {first} on {meta}"
    page.mouse.click(point["x"], point["y"])
    time.sleep(1)
    settle(page)


def test_clicking_a_mask_cell_switches_it_and_a_patch_chooses_it(server_url):
    query = urllib.parse.urlencode({"text": "the movie was not good", "mask_view": "step"})
    with chromium_page(failure_shot="click-failure.png") as page:
        page.goto(f"{server_url}/masks?{query}", wait_until="domcontentloaded", timeout=180_000)
        settle(page)
        assert poll(page, OUTLINES, lambda s: s == [], arg="step-mask") == []  # the model's own mask
        click(page, "step-mask", "switch", [1, 3])  # query 1:movie -> key 3:not
        outlines = poll(page, OUTLINES, lambda s: bool(s), arg="step-mask")
        assert outlines == [[2.5, 0.5]], outlines  # the changed cell (key 3, query 1) is outlined
        assert page.get_by_text("1 cell(s) differ", exact=False).count()
        page.screenshot(path=str(ARTIFACTS / "click-mask-cell.png"), timeout=60_000)
        click(page, "step-mask", "switch", [1, 3])  # again: back to the model's own mask
        assert poll(page, OUTLINES, lambda s: s == [], arg="step-mask") == []

        page.goto(f"{server_url}/vision", wait_until="domcontentloaded", timeout=180_000)
        settle(page)
        title = (
            "() => document.querySelector('.js-plotly-plot') && [...document.querySelectorAll('.js-plotly-plot')]"
            ".filter(p => (p.layout.meta || '').startsWith('vision-patch-')).map(p => p.layout.title.text)"
        )
        before = poll(page, title, bool)
        click(page, "vision-overlay", "patch", [0, 3])  # the top-right patch
        after = poll(page, title, lambda t: bool(t) and t != before)
        page.screenshot(path=str(ARTIFACTS / "click-vision-patch.png"), timeout=60_000)
        assert after != before and all("(1, 4)" in t for t in after), (before, after)


# Page coordinates of the first hover point of the lines view (the trace whose texts name a query and a key).
LINE_POINT = """(meta) => {
  const gd = [...document.querySelectorAll('.js-plotly-plot')].find(p => p.layout && p.layout.meta === meta);
  if (!gd || !gd.calcdata) return null;
  const t = gd._fullData.findIndex(d => d.mode === 'markers' && Array.isArray(d.text) && String(d.text[0]).includes('→'));
  if (t < 0) return null;
  gd.scrollIntoView({block: "center"});
  const cd = gd.calcdata[t][0];
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  const box = gd.getBoundingClientRect();
  return {x: box.left + xa._offset + xa.l2p(cd.x), y: box.top + ya._offset + ya.l2p(cd.y), text: gd._fullData[t].text[0]};
}"""


def test_hovering_a_line_names_its_query_key_and_weight(server_url):
    with chromium_page(failure_shot="hover-line-failure.png") as page:
        page.goto(f"{server_url}/attention?text=the+movie+was+not+good", wait_until="domcontentloaded")
        settle(page)
        point = poll(page, LINE_POINT, bool, timeout=120, arg="attention-lines")
        assert point, "no lines view"
        time.sleep(1)
        point = page.evaluate(LINE_POINT, "attention-lines")  # again, after scrolling it into view
        page.mouse.move(point["x"] + 1, point["y"])
        label = poll(page, "() => [...document.querySelectorAll('.hovertext')].map(h => h.textContent)", bool, 30)
        page.screenshot(path=str(ARTIFACTS / "hover-line.png"), timeout=60_000)
        assert label == [point["text"]], (label, point)
        assert "→" in label[0] and label[0].split(": ")[-1].replace(".", "").isdigit()
