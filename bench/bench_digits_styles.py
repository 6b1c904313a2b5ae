"""Accuracy of the bundled digit model per picture style, every picture going through the upload
path (PNG/JPEG bytes -> transformer.vision.images.prepare_image_here, the code the page and
``inspect --image`` run in their child process).

Styles: test-split images saved as PNGs (sizes, nearest/smooth scaling, either ink colour);
thick and thin strokes; small and off-centre on a large page; digits rendered in the fonts
found on this machine (none of them in training: the model saw only scikit-learn's digits);
and a photo-like page (uneven light, noise, JPEG).

Run: python bench/bench_digits_styles.py [--out bench/results/digits_styles.json]
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw, ImageFilter, ImageFont

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from transformer.vision.analysis import analyze_images  # noqa: E402
from transformer.vision.bundle import load_vision_bundle  # noqa: E402
from transformer.vision.digits import upsample  # noqa: E402
from transformer.vision.images import prepare_image_here  # noqa: E402

FONT_DIRS = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/truetype/liberation")


def test_split() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    data = load_digits()
    idx = np.arange(len(data.target))
    _, test = train_test_split(idx, test_size=0.2, random_state=0, stratify=data.target)
    return data.images[test], data.target[test]


def encode(picture: Image.Image, fmt: str = "PNG") -> bytes:
    buffer = io.BytesIO()
    picture.save(buffer, fmt, **({"quality": 70} if fmt == "JPEG" else {}))
    return buffer.getvalue()


def grey(image8: np.ndarray, dark_ink: bool = False) -> Image.Image:
    values = (image8 / 16 * 255).round().astype(np.uint8)
    return Image.fromarray(255 - values if dark_ink else values, "L")


def saved(images, side: int, resampling, dark_ink: bool) -> list[bytes]:
    return [encode(grey(im, dark_ink).resize((side, side), resampling)) for im in images]


def strokes(images, size: int) -> list[bytes]:
    """Strokes made thicker (size > 0: max filter) or thinner (size < 0: min filter) at 128 px."""
    out = []
    for im in images:
        big = grey(im).resize((128, 128), Image.BILINEAR)
        big = big.filter(ImageFilter.MaxFilter(size) if size > 0 else ImageFilter.MinFilter(-size))
        out.append(encode(Image.eval(big, lambda v: 255 - v)))  # dark ink on white
    return out


def small_off_centre(images, rng: np.random.Generator) -> list[bytes]:
    out = []
    for im in images:
        page = Image.new("L", (240, 240), 255)
        side = int(rng.integers(28, 48))
        x, y = (int(v) for v in rng.integers(5, 240 - side - 5, 2))
        page.paste(grey(im, dark_ink=True).resize((side, side), Image.BICUBIC), (x, y))
        out.append(encode(page))
    return out


def photo_like(images, rng: np.random.Generator) -> list[bytes]:
    out = []
    for im in images:
        ink = np.asarray(grey(im).resize((160, 160), Image.BICUBIC), dtype=np.float32) / 255
        page = np.linspace(0.95, 0.7, 240)[None, :] * np.linspace(1.0, 0.85, 240)[:, None]  # uneven light
        page = page + rng.normal(0, 0.03, page.shape)
        page[40:200, 40:200] *= 1 - 0.8 * ink
        out.append(encode(Image.fromarray((np.clip(page, 0, 1) * 255).astype(np.uint8)), "JPEG"))
    return out


def fonts() -> list[Path]:
    found = sorted(p for d in FONT_DIRS for p in Path(d).glob("*.ttf"))
    return [p for p in found if "Math" not in p.name]


def rendered(font: Path) -> tuple[list[bytes], np.ndarray]:
    out = []
    for digit in range(10):
        page = Image.new("L", (200, 200), 255)
        ImageDraw.Draw(page).text((100, 100), str(digit), fill=0, font=ImageFont.truetype(str(font), 150), anchor="mm")
        out.append(encode(page))
    return out, np.arange(10)


def accuracy(model, pictures: list[bytes], labels: np.ndarray) -> float:
    arrays = np.stack([prepare_image_here(data, 32, 1, digit_style=True).array for data in pictures])
    return float((analyze_images(model, arrays).probabilities.argmax(1) == labels).mean())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(ROOT / "assets" / "models" / "vit-digits"))
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "digits_styles.json"))
    args = p.parse_args()
    torch.set_num_threads(1)
    model = load_vision_bundle(args.model, "cpu")
    images, labels = test_split()
    rng = np.random.default_rng(0)
    styles = {"test split as trained (no file)": None}
    for side in (8, 28, 64, 300):
        for name, resampling in (("nearest", Image.NEAREST), ("bilinear", Image.BILINEAR), ("bicubic", Image.BICUBIC)):
            for dark in (False, True):
                styles[f"saved PNG {side} px, {name}, {'dark' if dark else 'bright'} ink"] = saved(
                    images, side, resampling, dark
                )
    styles["thick strokes (max filter 9 at 128 px)"] = strokes(images, 9)
    styles["very thick strokes (max filter 17 at 128 px)"] = strokes(images, 17)
    styles["thin strokes (min filter 5 at 128 px)"] = strokes(images, -5)
    styles["small and off-centre on a 240 px page"] = small_off_centre(images, rng)
    styles["photo-like page (uneven light, noise, JPEG 70)"] = photo_like(images, rng)
    report: dict = {}
    for name, pictures in styles.items():
        if pictures is None:
            acc = float((analyze_images(model, upsample(images)).probabilities.argmax(1) == labels).mean())
        else:
            acc = accuracy(model, pictures, labels)
        report[name] = {"images": len(labels), "accuracy": round(acc, 4)}
        print(f"{acc:.4f}  {name}", flush=True)
    font_scores = {}
    for font in fonts():
        pictures, digits = rendered(font)
        font_scores[font.stem] = round(accuracy(model, pictures, digits), 2)
    report["rendered fonts (10 digits each, none in training)"] = {
        "fonts": font_scores,
        "accuracy": round(float(np.mean(list(font_scores.values()))), 4),
    }
    print(f"{report['rendered fonts (10 digits each, none in training)']['accuracy']:.4f}  fonts: {font_scores}")
    report["command"] = "python bench/bench_digits_styles.py " + " ".join(sys.argv[1:])
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
