"""Accuracy of the digit model on digits drawn with the mouse in the Vision page's drawing box.

Each digit 0–9 is written as strokes (polylines in a unit box, shaped like quick handwriting:
an open 4, a 1 with a flag, a 7 without a bar) and drawn in several ways — sizes, places in the
box, slants, widths — with a little seeded tremor. A real browser (Debian's chromium through
Playwright) presses, moves and lifts the mouse over the canvas, stroke by stroke; the page then
reads the drawing through the upload path and the answer is read off the page (the metric and
the top-3 line), exactly what a student sees. ``--offline`` instead paints the same strokes with
PIL (round-capped lines of the box's stroke width) and runs the upload path and the model in
this process: quicker, for trying stroke widths, but not the browser's own drawing.

Run: python bench/bench_drawn_digits.py [--out bench/results/drawn_digits.json]
     python bench/bench_drawn_digits.py --offline [--stroke-width 22 ...] [--out ...]
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.browser_server import poll, settle  # noqa: E402
from transformer.vision.digit_strokes import Stroke, arc  # noqa: E402  (x, y) in a unit box, y down
from ui.drawing import BOX_SIDE, STROKE_WIDTH  # noqa: E402

DIGITS: dict[int, list[Stroke]] = {
    0: [arc(0.5, 0.5, 0.28, 0.47, -100, 265, 36)],
    1: [[(0.32, 0.22), (0.55, 0.0), (0.55, 1.0)]],
    2: [arc(0.5, 0.27, 0.28, 0.26, 190, 360, 14) + [(0.7, 0.55), (0.22, 1.0), (0.82, 1.0)]],
    3: [arc(0.48, 0.25, 0.28, 0.24, 200, 450, 18)[:-3] + arc(0.48, 0.72, 0.32, 0.27, -90, 150, 18)],
    4: [[(0.58, 0.0), (0.15, 0.64), (0.85, 0.64)], [(0.65, 0.3), (0.65, 1.0)]],
    5: [[(0.8, 0.0), (0.28, 0.0), (0.24, 0.44)] + arc(0.5, 0.7, 0.3, 0.3, -120, 150, 18)],
    6: [[(0.72, 0.0), (0.42, 0.18), (0.25, 0.5)] + arc(0.5, 0.74, 0.26, 0.25, 180, 540, 26)],
    7: [[(0.15, 0.0), (0.85, 0.0), (0.4, 1.0)]],
    8: [arc(0.5, 0.25, 0.22, 0.24, 90, 450, 24), arc(0.5, 0.73, 0.28, 0.27, -90, 270, 26)],
    9: [arc(0.5, 0.28, 0.27, 0.27, 0, 365, 26), [(0.77, 0.28), (0.72, 1.0)]],
}


@dataclass(frozen=True)
class Way:
    """How a digit is placed in the box: its height (share of the box), centre (shares), slant
    (x shift per unit of height above the middle), width (times its natural width)."""

    name: str
    height: float
    centre: tuple[float, float]
    slant: float
    width: float = 1.0


WAYS = (
    Way("large, centred, upright", 0.78, (0.5, 0.5), 0.0),
    Way("small, top left, slanted right", 0.4, (0.3, 0.32), 0.25),
    Way("medium, low right, slanted left, wide", 0.55, (0.62, 0.62), -0.15, 1.3),
    Way("tall and narrow, slanted right", 0.9, (0.5, 0.5), 0.3, 0.7),
    Way("tiny, bottom left, upright", 0.28, (0.25, 0.75), 0.0, 1.1),
)


def placed(strokes: list[Stroke], way: Way, side: int, seed: int) -> list[np.ndarray]:
    """The strokes in box pixels, (N, 2) each: scaled, slanted, moved, resampled every ~4 px,
    with a seeded tremor of about a pixel."""
    rng = np.random.default_rng(seed)
    out = []
    for stroke in strokes:
        p = np.asarray(stroke, dtype=float)
        x = (p[:, 0] - 0.5) * way.width + way.slant * (0.5 - p[:, 1])
        y = p[:, 1] - 0.5
        pixels = np.stack([way.centre[0] + way.height * x, way.centre[1] + way.height * y], axis=1) * side
        out.append(resampled(pixels, 4.0) + rng.normal(0, 0.7, size=(1, 2)))
    return [np.clip(s, 2, side - 3) for s in out]


def resampled(points: np.ndarray, step: float) -> np.ndarray:
    """(N, 2) polyline -> points about ``step`` apart along it (first and last kept)."""
    lengths = np.linalg.norm(np.diff(points, axis=0), axis=1)
    at = np.concatenate([[0.0], np.cumsum(lengths)])
    wanted = np.linspace(0.0, at[-1], max(2, int(at[-1] / step) + 1))
    return np.stack([np.interp(wanted, at, points[:, 0]), np.interp(wanted, at, points[:, 1])], axis=1)


def drawings(side: int = BOX_SIDE) -> list[tuple[int, str, list[np.ndarray]]]:
    """(digit, way, strokes in box pixels) for every digit drawn every way."""
    return [
        (digit, way.name, placed(DIGITS[digit], way, side, seed=10 * digit + k))
        for digit in DIGITS
        for k, way in enumerate(WAYS)
    ]


def digit_space():
    """The page's "does not look like a digit" rule (ui.vision_unknown), fitted as the page fits it."""
    from ui.vision_unknown import fit_page_space

    return fit_page_space()


# ---- offline: PIL paints the strokes, the upload path and the model run here ----------------------------------------
def painted_png(strokes: list[np.ndarray], side: int, width: int) -> bytes:
    from PIL import Image, ImageDraw

    picture = Image.new("RGB", (side, side), "black")
    pen = ImageDraw.Draw(picture)
    for s in strokes:
        pen.line([tuple(q) for q in s], fill="white", width=width, joint="curve")
        for q in (s[0], s[-1]):
            pen.ellipse([q[0] - width / 2, q[1] - width / 2, q[0] + width / 2, q[1] + width / 2], fill="white")
    buffer = io.BytesIO()
    picture.save(buffer, "PNG")
    return buffer.getvalue()


def offline_answers(width: int) -> list[dict]:
    import torch

    from transformer.vision.analysis import analyze_images
    from transformer.vision.bundle import load_vision_bundle
    from transformer.vision.images import prepare_image_here

    torch.set_num_threads(1)
    loaded = load_vision_bundle(ROOT / "assets" / "models" / "vit-digits", torch.device("cpu"))
    space = digit_space()
    rows = []
    for digit, way, strokes in drawings():
        prepared = prepare_image_here(painted_png(strokes, BOX_SIDE, width), 32, 1, digit_style=True)
        probs = analyze_images(loaded, prepared.array[None]).probabilities[0]
        top = np.argsort(probs)[::-1][:3]
        unknown = bool(space.residual(prepared.array[None])[0] > space.threshold)
        rows.append(dict(digit=digit, way=way, answer=int(top[0]), confidence=round(float(probs[top[0]]), 4),
                         top3=[int(k) for k in top], not_a_digit_warning=unknown))  # fmt: skip
    return rows


# ---- in the browser: the page's own drawing box ----------------------------------------------------------------------
CANVAS_READY = (
    """() => [...document.querySelectorAll('*')].some(e => e.shadowRoot && e.shadowRoot.querySelector('canvas'))"""
)
ANSWER = """() => {
  const value = document.querySelector('[data-testid="stMetricValue"]');
  const caption = [...document.querySelectorAll('[data-testid="stCaptionContainer"], [data-testid="stAlertContainer"]')]
    .map(e => e.innerText).find(s => s.includes('Top 3'));
  const running = document.querySelector('[data-testid="stStatusWidget"]');
  const unknown = [...document.querySelectorAll('[data-testid="stAlertContainer"]')]
    .some(e => e.innerText.includes('does not look like anything'));
  return value && caption && !running ? {value: value.innerText.trim(), top: caption, unknown: unknown} : null;
}"""


def open_drawing_box(page, url: str, source_label: str) -> None:
    """The Vision page at ``url`` with its "Draw" source chosen and the canvas shown."""
    page.goto(url, wait_until="domcontentloaded", timeout=180_000)
    page.get_by_text(source_label, exact=True).first.click(timeout=180_000)
    poll(page, CANVAS_READY, bool, timeout=180)
    settle(page)


def draw_strokes(page, box: dict, strokes: list[np.ndarray]) -> None:
    """Press, move and lift the mouse along each stroke, as a hand would. The pointer rests over the
    box first: the canvas's toolbar, hidden until then, covers the box's top right corner (about
    140 × 30 px) until the pointer has been over the box for a moment."""
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    time.sleep(0.5)
    for s in strokes:
        page.mouse.move(box["x"] + s[0, 0], box["y"] + s[0, 1])
        page.mouse.down()
        for q in s[1:]:
            page.mouse.move(box["x"] + q[0], box["y"] + q[1])
        page.mouse.up()
        time.sleep(0.3)


def top3(caption: str) -> list[int]:
    """The digits named in bold in the page's "Top 3: **7** 98.1 %, …" line, in order."""
    after = caption.split("Top 3:", 1)[1]
    return [int(part.strip()[0]) for part in after.split(",")[:3]]


def browser_answers() -> list[dict]:
    from playwright.sync_api import sync_playwright

    from bench.load_server import start_server, wait_healthy
    from tests.browser_server import free_port, launch

    port = free_port()
    server = start_server(port, ROOT)
    rows = []
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, 180, server)
        with sync_playwright() as p:
            browser = launch(p)
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            open_drawing_box(page, f"{url}/vision?lang=en", "Draw")
            for digit, way, strokes in drawings():
                box = page.locator("canvas").last.bounding_box()
                draw_strokes(page, box, strokes)
                time.sleep(1.0)
                settle(page)  # the runs after earlier strokes answer too: wait for the one after the last
                answer = poll(page, ANSWER, bool, timeout=120)
                top = top3(answer["top"])
                rows.append(dict(digit=digit, way=way, answer=int(answer["value"]), top3=top,
                                 not_a_digit_warning=answer["unknown"]))  # fmt: skip
                print(digit, way, "->", answer["value"], top, flush=True)
                page.get_by_role("button", name="Clear the drawing").click()
                poll(page, "() => !document.querySelector('[data-testid=\"stMetricValue\"]')", bool, timeout=60)
                poll(page, CANVAS_READY, bool, timeout=60)
                settle(page)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    return rows


def summary(rows: list[dict]) -> dict:
    right = [r["answer"] == r["digit"] for r in rows]
    in_top3 = [r["digit"] in r["top3"] for r in rows]
    per_way = {w.name: float(np.mean([r["answer"] == r["digit"] for r in rows if r["way"] == w.name])) for w in WAYS}
    per_digit = {str(d): int(sum(r["answer"] == d for r in rows if r["digit"] == d)) for d in DIGITS}
    warned = float(np.mean([r["not_a_digit_warning"] for r in rows]))
    return dict(n=len(rows), accuracy=float(np.mean(right)), top3_accuracy=float(np.mean(in_top3)),
                accuracy_per_way=per_way, right_per_digit=per_digit, drawings_per_digit=len(WAYS),
                share_warned_not_a_digit=warned)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offline", action="store_true", help="paint with PIL instead of drawing in a browser")
    parser.add_argument("--stroke-width", type=int, nargs="+", default=[STROKE_WIDTH], help="offline only")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.offline:
        result = {str(w): summary(offline_answers(w)) for w in args.stroke_width}
        result = dict(
            how="offline: PIL-painted strokes through prepare_image_here", box=BOX_SIDE, by_stroke_width=result
        )
    else:
        rows = browser_answers()
        result = dict(how="Vision page in chromium, strokes drawn with page.mouse", box=BOX_SIDE,
                      stroke_width=STROKE_WIDTH, **summary(rows), drawings=rows)  # fmt: skip
    result["machine"] = platform.platform()
    print(json.dumps({k: v for k, v in result.items() if k != "drawings"}, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
