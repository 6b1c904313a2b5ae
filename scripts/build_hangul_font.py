"""Build the Hangul web font the app ships (static/fonts/noto-sans-kr-hangul-{400,700}.woff2).

Without Debian's fonts-noto-cjk (a fresh Linux machine, a classroom PC) every Hangul letter was an empty
box. The app serves these two files itself (``server.enableStaticServing``) and names them in the theme's
font list (``.streamlit/config.toml``), so Hangul renders offline everywhere the app runs.

Source: Noto Sans KR (SIL Open Font License 1.1, static/fonts/OFL.txt), the TTF files of the npm package
``@expo-google-fonts/noto-sans-kr`` 0.4.3 (``npm pack @expo-google-fonts/noto-sans-kr``). Subset with
fontTools to the Hangul syllables, jamo, compatibility jamo, CJK punctuation and full-width forms: Latin
stays Streamlit's own font. Each weight is about 0.65 MB as WOFF2 (needs ``pip install fonttools brotli``).

    python scripts/build_hangul_font.py path/to/package
"""

from __future__ import annotations

import sys
from pathlib import Path

from fontTools import subset

UNICODES = "U+AC00-D7A3,U+1100-11FF,U+3130-318F,U+3000-303F,U+FF01-FF60"
WEIGHTS = {"400": "400Regular", "700": "700Bold"}
OUT = Path(__file__).resolve().parent.parent / "static" / "fonts"


def build(package: Path) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for weight, name in WEIGHTS.items():
        source = package / name / f"NotoSansKR_{name}.ttf"
        target = OUT / f"noto-sans-kr-hangul-{weight}.woff2"
        subset.main([str(source), f"--unicodes={UNICODES}", "--flavor=woff2", "--layout-features=*",
                     "--no-hinting", "--desubroutinize", f"--output-file={target}"])  # fmt: skip
        print(f"{target}: {target.stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    build(Path(sys.argv[1]))
