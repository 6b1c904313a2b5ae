"""The digit upload path gives the training data back: a test-split image of scikit-learn's digits
saved as a PNG at any size (nearest or smooth scaling, either ink colour) is recognised as in
the test split, through the picture reader, ``inspect --image`` and the Vision page."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image

from tests.app_helpers import ROOT, figures, open_app, texts
from transformer.cli.main import main
from transformer.vision.analysis import analyze_images
from transformer.vision.bundle import load_vision_bundle
from transformer.vision.digits import dataset_frame, upsample
from transformer.vision.images import prepare_image_here

MODEL = ROOT / "assets" / "models" / "vit-digits"
RESAMPLING = {"nearest": Image.NEAREST, "bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC, "lanczos": Image.LANCZOS}


@pytest.fixture(scope="module")
def split():
    """The test split as 8 x 8 counts (0..16) and labels: the same seeded split as training."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    data = load_digits()
    idx = np.arange(len(data.target))
    _, test = train_test_split(idx, test_size=0.2, random_state=0, stratify=data.target)
    return data.images[test], data.target[test]


@pytest.fixture(scope="module")
def model():
    return load_vision_bundle(MODEL, "cpu")


def png_bytes(image8: np.ndarray, side: int, resampling: str, dark_ink: bool) -> bytes:
    """A dataset image saved as a ``side`` x ``side`` PNG, bright ink on black or dark ink on white."""
    grey = (image8 / 16 * 255).round().astype(np.uint8)
    picture = Image.fromarray(255 - grey if dark_ink else grey, "L").resize((side, side), RESAMPLING[resampling])
    buffer = io.BytesIO()
    picture.save(buffer, "PNG")
    return buffer.getvalue()


def accuracy(model, arrays: list[np.ndarray], labels: np.ndarray) -> float:
    return float((analyze_images(model, np.stack(arrays)).probabilities.argmax(1) == labels).mean())


def test_an_8_by_8_picture_comes_back_exactly_as_in_training(split):
    images, _ = split
    for image8 in images[:20]:
        array, notes = dataset_frame(image8 / 16.0 * (16.0 / image8.max()))
        np.testing.assert_allclose(array, upsample(image8[None] * 16.0 / image8.max())[0], atol=1e-5)
        assert notes == []


@pytest.mark.parametrize(
    ("side", "resampling", "dark_ink"),
    [(8, "nearest", False), (28, "nearest", True), (32, "bilinear", False), (44, "bicubic", True),
     (77, "lanczos", False), (100, "nearest", False), (300, "bilinear", True), (300, "bicubic", False)],
)  # fmt: skip
def test_saved_test_images_are_recognised_as_in_the_test_split(model, split, side, resampling, dark_ink):
    images, labels = split
    reference = accuracy(model, list(upsample(images)), labels)
    prepared = [prepare_image_here(png_bytes(im, side, resampling, dark_ink), 32, 1, True) for im in images]
    assert ("inverted" in prepared[0].notes) is dark_ink
    assert accuracy(model, [p.array for p in prepared], labels) >= min(0.98, reference)


def test_a_digit_with_a_margin_is_cropped_and_framed_like_the_dataset(model, split):
    images, labels = split
    arrays = []
    for image8 in images[:100]:
        page = np.zeros((16, 24))
        page[5:13, 9:17] = image8  # small, off centre, on a wide page
        big = Image.fromarray((page / 16 * 255).astype(np.uint8)).resize((240, 160), Image.NEAREST)
        buffer = io.BytesIO()
        big.save(buffer, "PNG")
        out = prepare_image_here(buffer.getvalue(), 32, 1, True)
        assert "cropped" in out.notes
        arrays.append(out.array)
    assert accuracy(model, arrays, labels[:100]) >= 0.95


@pytest.mark.parametrize("side, width", [(65, 1), (64, 3), (96, 6), (300, 9)])
def test_a_thin_straight_stroke_filling_the_picture_is_read_not_lost(model, side, width):
    """A centred upright stroke the picture's height changes value at a few columns and rows, as
    an enlarged 8 x 8 dataset image does, but not on its cell edges: it was once read cell by cell,
    found no ink at the cells' centres and came out as NaN."""
    page = np.zeros((side, side), dtype=np.float32)
    middle = side // 2 - width // 2
    page[side // 25 : side - side // 25, middle : middle + width] = 1.0  # 92 % of the height: a whole frame
    for picture in (page, 1.0 - page):  # bright ink on black, dark ink on paper
        framed, _ = dataset_frame(picture)
        assert np.isfinite(framed).all() and framed.max() > 0.5
        assert analyze_images(model, framed[None]).probabilities.argmax() == 1


def test_inspect_image_reads_saved_test_images(split, tmp_path, capsys):
    images, labels = split
    paths = []
    for k in range(8):
        path = tmp_path / f"digit{k}.png"
        path.write_bytes(png_bytes(images[k], [16, 64, 200, 33][k % 4], ["nearest", "bicubic"][k % 2], k % 3 == 0))
        paths.append(str(path))
    assert main(["inspect", "--checkpoint", str(MODEL), "--image", *paths, "--attention", "none"]) == 0
    records = json.loads(capsys.readouterr().out)["inputs"]
    assert [r["prediction"]["label"] for r in records] == [str(d) for d in labels[:8]]


def test_the_vision_page_reads_an_uploaded_test_image(split):
    images, labels = split
    at = open_app("vision")
    at.radio(key="vsource").set_value("upload").run()
    at.file_uploader(key="vupload").upload("digit.png", png_bytes(images[3], 140, "bilinear", True), "image/png").run()
    assert not at.exception and not at.error
    assert at.metric[0].value == str(labels[3])
    assert "vision-probabilities" in figures(at)


def test_the_vision_page_shows_the_top_3_and_says_when_it_is_unsure():
    at = open_app("vision")
    assert any(c.startswith("Top 3: **") for c in texts(at.caption))
    at.radio(key="vsource").set_value("upload").run()
    noise = (np.random.default_rng(4).random((12, 12)) > 0.6).astype(np.uint8) * 255  # no digit at all
    buffer = io.BytesIO()
    Image.fromarray(noise).resize((96, 96), Image.NEAREST).save(buffer, "PNG")
    at.file_uploader(key="vupload").upload("noise.png", buffer.getvalue(), "image/png").run()
    sure = float(at.metric[0].delta.split()[0])
    assert sure < 80  # this picture's top answer
    unsure = [w.value for w in at.warning if "The model is unsure" in w.value]
    assert unsure and f"{sure:.1f} %" in unsure[0] and unsure[0].count("**") == 6  # three ranked labels


def test_the_camera_source_asks_for_a_photo():
    at = open_app("vision")
    at.radio(key="vsource").set_value("camera").run()
    assert not at.exception
    assert any("take a photo" in i.value for i in at.info)
