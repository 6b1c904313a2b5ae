"""Real browser on a machine without a CJK font: Hangul still renders, from the font the app serves.

Chromium is started with a fontconfig that rejects every system CJK font (as on a fresh Linux machine
without Debian's fonts-noto-cjk). Two different Hangul syllables drawn with the system's fonts are
then the same empty box; drawn with the app's font (the theme's, and the figures') they differ.
Screenshots: ``test-artifacts/hangul-no-cjk-<page>.png``.
"""

from __future__ import annotations

import os

from tests import browser_server
from tests.browser_server import ARTIFACTS, BROWSER_ARGS, CHROMIUM, needs_chromium, settle

pytestmark = needs_chromium
server_url = browser_server.server_url  # the fixture, under the name the tests ask for

NO_CJK = """<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  <selectfont><rejectfont><glob>*CJK*</glob><glob>*Hangul*</glob><glob>*Nanum*</glob></rejectfont></selectfont>
  <cachedir>{cache}</cachedir>
</fontconfig>
"""
# Do "한" and "국" draw the same pixels (an empty box for both) in this font?
SAME_GLYPH = """async (family) => {
  await document.fonts.ready;
  await document.fonts.load(`32px ${family}`, '한국');
  const draw = (ch) => {
    const c = document.createElement('canvas'); c.width = 48; c.height = 48;
    const g = c.getContext('2d'); g.font = `32px ${family}`; g.fillText(ch, 4, 38);
    return Array.from(g.getImageData(0, 0, 48, 48).data).join(',');
  };
  return draw('한') === draw('국');
}"""


def test_hangul_renders_without_a_system_cjk_font(server_url, tmp_path):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    conf = tmp_path / "fonts.conf"
    conf.write_text(NO_CJK.format(cache=tmp_path / "cache"))
    env = {**os.environ, "FONTCONFIG_FILE": str(conf)}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS, env=env)
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.set_default_timeout(120_000)
        try:
            page.goto(f"{server_url}/translate?lang=ko", wait_until="domcontentloaded", timeout=180_000)
            settle(page)
            page.wait_for_timeout(2000)
            page.screenshot(path=str(ARTIFACTS / "hangul-no-cjk-translate.png"), timeout=60_000)
            assert page.evaluate(SAME_GLYPH, "sans-serif"), (
                "a system CJK font is still installed: the check proves nothing"
            )
            assert not page.evaluate(SAME_GLYPH, '"Noto Sans KR Hangul"'), "the app's Hangul font did not load"
            assert not page.evaluate(SAME_GLYPH, '"Open Sans"'), "the figures' Hangul face did not load"
            body = page.evaluate("getComputedStyle(document.querySelector('h1')).fontFamily")
            assert "Noto Sans KR Hangul" in body, body
        finally:
            browser.close()
