"""Page run time in Korean vs English: the same page rerun in two AppTest sessions, one per language.

Run: python bench/bench_language.py [--repeats 7] [--pages attention masks]
Each page is opened once per language (model loading and analysis caches warm up), then rerun
``--repeats`` times, the two languages taking turns so that a busy machine slows both alike.
Prints the median run time per page and language and their ratio (Korean / English).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from ui.i18n import translate  # noqa: E402

APP = str(ROOT / "streamlit_app.py")
LANGS = ("en", "ko")


def open_page(page: str, lang: str) -> AppTest:
    """The app in ``lang`` on ``pages/<page>.py``, run once (warm)."""
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["lang"] = lang
    at.run()
    if page != "start":
        at.switch_page(f"pages/{page}.py").run()
    at.run()
    if at.exception:
        raise RuntimeError(f"{page} ({lang}): {at.exception[0].value}")
    return at


def time_page(page: str, repeats: int) -> dict[str, float]:
    """Median seconds of one rerun of ``page`` per language."""
    apps = {lang: open_page(page, lang) for lang in LANGS}
    runs: dict[str, list[float]] = {lang: [] for lang in LANGS}
    for _ in range(repeats):
        for lang in LANGS:
            start = time.perf_counter()
            apps[lang].run()
            runs[lang].append(time.perf_counter() - start)
    return {lang: statistics.median(values) for lang, values in runs.items()}


def time_translate(calls: int = 100_000) -> float:
    """Microseconds per ``translate`` call with one format field (the catalogue is already read)."""
    translate("tour.heading", "ko", n=1, total=8)
    start = time.perf_counter()
    for i in range(calls):
        translate("tour.heading", "ko", n=i, total=8)
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    pages = sorted(p.stem for p in (ROOT / "pages").glob("*.py") if not p.stem.startswith("_"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--pages", nargs="*", default=pages)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"translate(): {time_translate():.2f} µs per call")
    print(f"{'page':<22}{'English ms':>12}{'Korean ms':>12}{'ko / en':>9}")
    for page in args.pages:
        try:
            medians = time_page(page, args.repeats)
        except Exception as err:  # noqa: BLE001 - report the page and go on with the others
            print(f"{page:<22}  could not run: {type(err).__name__}: {str(err)[:80]}")
            continue
        en, ko = medians["en"] * 1000, medians["ko"] * 1000
        print(f"{page:<22}{en:>12.1f}{ko:>12.1f}{ko / en:>9.2f}")


if __name__ == "__main__":
    main()
