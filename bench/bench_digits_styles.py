"""Accuracy of digit models per picture style, every picture going through the upload path
(PNG/JPEG bytes -> transformer.vision.images.prepare_image_here, the code the page and
``inspect --image`` run in their child process). Several models (``--model`` repeated) are scored
on the very same pictures, one after the other per style.

Styles: test-split images saved as PNGs (sizes, nearest/smooth scaling, either ink colour);
thick and thin strokes; small and off-centre on a large page; a photo-like page (uneven light,
noise, JPEG); digits rendered in the fonts found here, split as transformer.vision.digit_styles
splits them: the Liberation fonts are never in training (held out), DejaVu and Noto may be
(``--font-renders`` of the training command). The styles the training draws differ from these:
its thickest stroke is a max filter of 7 at 64 px (the "very thick" here is 17 at 128 px), its
photos have light falling off around a spot and no JPEG (here: in a straight line, JPEG 70).

Run: python bench/bench_digits_styles.py [--model DIR --model DIR ...] [--out bench/results/digits_styles.json]
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

from transformer.text.calibration import expected_calibration_error, fit_temperature, softmax  # noqa: E402
from transformer.vision import digit_styles  # noqa: E402
from transformer.vision.analysis import analyze_images  # noqa: E402
from transformer.vision.bundle import load_vision_bundle  # noqa: E402
from transformer.vision.digits import load_digits_splits, upsample  # noqa: E402
from transformer.vision.images import prepare_image_here  # noqa: E402


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


def rendered(face: digit_styles.FontFace) -> list[bytes]:
    """The digits 0-9 in ``face``, black on a white 200 px page, 150 px type, centred."""
    out = []
    for digit in range(10):
        page = Image.new("L", (200, 200), 255)
        font = ImageFont.truetype(str(face.path), 150, index=face.index)
        ImageDraw.Draw(page).text((100, 100), str(digit), fill=0, font=font, anchor="mm")
        out.append(encode(page))
    return out


def prepared(pictures: list[bytes]) -> np.ndarray:
    """Picture files -> (N, 1, 32, 32) as the upload path frames them for the digit model."""
    return np.stack([prepare_image_here(data, 32, 1, digit_style=True).array for data in pictures])


def correct_share(model, arrays: np.ndarray, labels: np.ndarray) -> float:
    return round(float((analyze_images(model, arrays).probabilities.argmax(1) == labels).mean()), 4)


def validation_set() -> tuple[np.ndarray, np.ndarray]:
    """The validation split, plain and in two random styles per digit (as the training's styled
    validation draws them): where a temperature is fitted."""
    val_images, val_labels = load_digits_splits(0).val
    styled = digit_styles.styled_digits(val_images, val_labels, 2, np.random.default_rng(10_000))
    return np.concatenate([val_images, styled[0]]), np.concatenate([val_labels, styled[1]])


def calibration(model, validation, measured: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict:
    """The digit model has no fitted temperature (nothing in transformer/vision applies one): what
    one fitted on ``validation`` would do. Per measured set (arrays, labels): ECE (10 bins) and
    the share of pictures answered wrongly with >= 90 % confidence, at T = 1 and at the fitted T."""
    log_p = lambda arrays: np.log(np.clip(analyze_images(model, arrays).probabilities, 1e-12, 1))  # noqa: E731
    temperature = fit_temperature(log_p(validation[0]), validation[1])
    out = {"temperature_fitted_on_validation": round(temperature, 3), "sets": {}}
    for name, (arrays, labels) in measured.items():
        row = {}
        for key, t in (("raw", 1.0), ("at_fitted_temperature", temperature)):
            probs = softmax(log_p(arrays), t)
            wrong_sure = (probs.argmax(1) != labels) & (probs.max(1) >= 0.9)
            row[key] = {
                "ece": round(expected_calibration_error(probs, labels), 4),
                "wrong_at_90_percent_or_more": round(float(wrong_sure.mean()), 4),
            }
        out["sets"][name] = row
    return out


def accuracy(model, pictures: list[bytes], labels: np.ndarray) -> float:
    return correct_share(model, prepared(pictures), labels)


CALIBRATION_SETS = (
    "test split as trained (no file)",
    "very thick strokes (max filter 17 at 128 px)",
    "photo-like page (uneven light, noise, JPEG 70)",
)


def picture_styles(images: np.ndarray) -> dict[str, list[bytes] | None]:
    """Every style's pictures of the test split (None: the split as trained, no file)."""
    rng = np.random.default_rng(0)
    styles: dict[str, list[bytes] | None] = {"test split as trained (no file)": None}
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
    return styles


def font_scores(models: dict, faces: list[digit_styles.FontFace]) -> dict:
    """Per model: accuracy over all faces' 10 digits, and per face."""
    digits = np.arange(10)
    per_face = {name: {} for name in models}
    for face in faces:
        pictures = rendered(face)
        for name, model in models.items():
            per_face[name][face.name] = round(accuracy(model, pictures, digits), 2)
    return {
        name: {"accuracy": round(float(np.mean(list(scores.values()))), 4), "fonts": scores}
        for name, scores in per_face.items()
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--model", action="append", help="a digit model folder (repeat to compare); default: the bundled one"
    )
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "digits_styles.json"))
    args = p.parse_args()
    torch.set_num_threads(1)
    paths = args.model or [str(ROOT / "assets" / "models" / "vit-digits")]
    models = {path: load_vision_bundle(path, "cpu") for path in paths}
    images, labels = test_split()
    report: dict = {"models": paths, "images": len(labels), "styles": {}}
    measured = {}
    for style, pictures in picture_styles(images).items():
        arrays = upsample(images) if pictures is None else prepared(pictures)
        if style in CALIBRATION_SETS:
            measured[style] = (arrays, labels)
        scores = {name: correct_share(model, arrays, labels) for name, model in models.items()}
        report["styles"][style] = scores
        print("  ".join(f"{v:.4f}" for v in scores.values()), style, flush=True)
    for key, held_out in (("fonts held out of training (Liberation)", True), ("training fonts (DejaVu, Noto)", False)):
        report[key] = font_scores(models, digit_styles.font_faces(held_out=held_out))
        print("  ".join(f"{v['accuracy']:.4f}" for v in report[key].values()), key, flush=True)
    held_out = digit_styles.font_faces(held_out=True)
    measured["fonts held out of training"] = (
        prepared([picture for face in held_out for picture in rendered(face)]),
        np.tile(np.arange(10), len(held_out)),
    )
    validation = validation_set()
    report["calibration"] = {name: calibration(model, validation, measured) for name, model in models.items()}
    print(json.dumps(report["calibration"]), flush=True)
    report["command"] = "python bench/bench_digits_styles.py " + " ".join(sys.argv[1:])
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
