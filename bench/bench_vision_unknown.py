"""Does the digit model's output say when a picture is not a digit? Scores measured on held-out digits
against pictures that are not digits (uniform noise, smileys, letters), each through the upload path
(``prepare_image_here(digit_style=True)``), as the Vision page reads an upload.

For each score the threshold flags at most 2 % of the held-out digits (their 2nd or 98th percentile);
the table gives the share of each kind of non-digit picture it flags. Writes bench/results/vision_unknown.json.

    python bench/bench_vision_unknown.py
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import shared  # noqa: F401  (puts the repository on sys.path)
import torch
from PIL import Image, ImageDraw

from transformer.vision import analyze_images, load_vision_bundle
from transformer.vision.digits import load_digits_splits
from transformer.vision.images import prepare_image_here
from ui.vision_unknown import fit_page_space

ROOT = Path(__file__).resolve().parent.parent
SIZE = 96


def png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def noise(seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (SIZE, SIZE, 3), dtype=np.uint8)
    return png(Image.fromarray(pixels))


def smiley(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    image = Image.new("L", (SIZE, SIZE), 255)
    draw = ImageDraw.Draw(image)
    r = int(rng.integers(30, 44))
    c = SIZE // 2 + int(rng.integers(-4, 5))
    width = int(rng.integers(3, 7))
    draw.ellipse([c - r, c - r, c + r, c + r], outline=0, width=width)
    for dx in (-r // 3, r // 3):
        draw.ellipse([c + dx - 4, c - r // 3 - 4, c + dx + 4, c - r // 3 + 4], fill=0)
    draw.arc([c - r // 2, c - r // 4, c + r // 2, c + r // 2], 20, 160, fill=0, width=width)
    return png(image)


def letter(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    image = Image.new("L", (SIZE, SIZE), 255)
    draw = ImageDraw.Draw(image)
    width = int(rng.integers(4, 9))
    kind = seed % 3
    if kind == 0:  # X
        draw.line([15, 15, 80, 80], fill=0, width=width)
        draw.line([80, 15, 15, 80], fill=0, width=width)
    elif kind == 1:  # a square
        draw.rectangle([20, 20, 76, 76], outline=0, width=width)
    else:  # a triangle
        draw.polygon([(48, 12), (84, 82), (12, 82)], outline=0, width=width)
    return png(image)


def scores(logits: np.ndarray) -> dict[str, np.ndarray]:
    z = torch.from_numpy(logits).double()
    probs = z.softmax(-1)
    return {
        "top_probability": probs.max(-1).values.numpy(),
        "entropy": -(probs * probs.clamp_min(1e-12).log()).sum(-1).numpy(),
        "max_logit": z.max(-1).values.numpy(),
        "energy": torch.logsumexp(z, -1).numpy(),
    }


def main() -> None:
    loaded = load_vision_bundle(ROOT / "assets" / "models" / "vit-digits")
    cfg = loaded.config
    splits = load_digits_splits()
    test_images, _ = splits.test
    residual = fit_page_space().residual  # the Vision page's rule
    digits = analyze_images(loaded, test_images).logits
    base = {**scores(digits), "pca_residual": residual(test_images)}
    others, other_scores = {}, {}
    for name, make in (("noise", noise), ("smiley", smiley), ("shape", letter)):
        batch = [
            prepare_image_here(make(seed), cfg.image_size, cfg.channels, digit_style=True).array for seed in range(30)
        ]
        others[name] = analyze_images(loaded, np.stack(batch)).logits
        other_scores[name] = {**scores(others[name]), "pca_residual": residual(np.stack(batch))}
    table = {}
    for score, values in base.items():
        low_is_unknown = score in ("top_probability", "max_logit", "energy")  # entropy, pca_residual: high is
        threshold = float(np.percentile(values, 2 if low_is_unknown else 98))
        flag = (lambda v, th=threshold: v < th) if low_is_unknown else (lambda v, th=threshold: v > th)
        row = {"threshold": threshold, "digits_flagged": float(flag(values).mean())}
        for name in others:
            row[f"{name}_flagged"] = float(flag(other_scores[name][score]).mean())
            row[f"{name}_median"] = float(np.median(other_scores[name][score]))
        row["digits_median"] = float(np.median(values))
        table[score] = row
        print(score, json.dumps(row))
    out = ROOT / "bench" / "results" / "vision_unknown.json"
    out.write_text(json.dumps({"n_digits": len(digits), "n_each_other": 30, "scores": table}, indent=2) + "\n")


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
