"""Pictures from users: bad ones get a clear reason, odd ones are converted and say how; shape scenes."""

from __future__ import annotations

import io
import json
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from tests.test_vision_helpers import png_bytes, tiny_model
from transformer.vision import save_vision_bundle
from transformer.vision.images import ImageError, prepare_image
from transformer.vision.inspect import inspect_images, is_vision_model
from transformer.vision.shapes import LABELS, Shape, draw_scene, inside, random_scene


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def empty_png() -> bytes:
    header = struct.pack(">IIBBBBB", 0, 0, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(b"")) + _chunk(b"IEND", b"")


def animated_gif() -> bytes:
    frames = [Image.new("L", (8, 8), v) for v in (0, 255)]
    buffer = io.BytesIO()
    frames[0].save(buffer, "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("data", "code", "words"),
    [
        (b"hello, not a picture", "not_image", "PNG or JPEG"),
        (empty_png(), "empty", "0 × 0"),
        (animated_gif(), "animated", "one frame"),
        (png_bytes(np.zeros((5100, 5000), dtype=np.uint8)), "too_many_pixels", "5000 × 5100"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "not_image", "PNG or JPEG"),
    ],
)
def test_bad_pictures_are_refused_with_a_reason(data, code, words):
    with pytest.raises(ImageError, match=words) as info:
        prepare_image(data, 32, 1)
    assert info.value.code == code


def test_cmyk_alpha_and_16_bit_are_converted_and_say_so():
    cmyk = io.BytesIO()
    Image.new("CMYK", (20, 20), (0, 255, 255, 0)).save(cmyk, "JPEG")  # red in print colours
    out = prepare_image(cmyk.getvalue(), 16, 3)
    assert "cmyk" in out.notes and out.array.shape == (3, 16, 16)
    assert out.array[0].mean() > 0.8 and out.array[1].mean() < 0.2  # still red
    rgba = np.zeros((10, 10, 4), dtype=np.uint8)  # fully transparent: lands on white
    out = prepare_image(png_bytes(rgba), 8, 3)
    assert "alpha" in out.notes and out.array.min() > 0.99
    deep = np.full((10, 10), 65535, dtype=np.uint16)
    out = prepare_image(png_bytes(deep), 8, 1)
    assert "bits16" in out.notes and out.array.max() == pytest.approx(1.0)


def test_digit_style_inverts_crops_and_centres_a_dark_drawing():
    page = np.full((60, 40), 255, dtype=np.uint8)
    page[10:30, 5:15] = 0  # a dark stroke on white, off centre
    out = prepare_image(png_bytes(page), 32, 1, digit_style=True)
    assert {"inverted", "cropped", "resized"} <= set(out.notes)
    ink = out.array[0] > 0.5
    rows, cols = np.nonzero(ink)
    assert abs(rows.mean() - 15.5) < 2 and abs(cols.mean() - 15.5) < 2  # centred
    assert out.array[0, 0, 0] < 0.05  # background is now black


def test_generated_masks_match_the_drawn_shapes():
    rng = np.random.default_rng(0)
    shapes = [Shape("circle", (8.0, 8.0), 5.0, (1.0, 0.0, 0.0)), Shape("square", (22.0, 22.0), 4.0, (0.0, 1.0, 0.0))]
    shapes.append(Shape("triangle", (8.0, 24.0), 5.0, (0.0, 0.0, 1.0)))
    scene = draw_scene(shapes, (0.5, 0.5, 0.5), 0.0, rng)
    # the circle: pixel centres within 5 px of (8, 8); counted here independently
    centres = [(r + 0.5, c + 0.5) for r in range(32) for c in range(32)]
    in_circle = sum((r - 8) ** 2 + (c - 8) ** 2 <= 25 for r, c in centres)
    assert (scene.mask == LABELS.index("circle")).sum() == in_circle
    assert (scene.mask == LABELS.index("square")).sum() == 8 * 8  # |row - 22| <= 4 for centres 18.5 .. 25.5
    triangle = scene.mask == LABELS.index("triangle")
    assert triangle[4, 23] and not triangle[4, 20] and triangle[12, 20]  # apex up, widening downwards
    for k, shape in enumerate(shapes):
        where = scene.mask == LABELS.index(shape.kind)
        np.testing.assert_array_equal(where, scene.objects == k + 1)
        np.testing.assert_allclose(scene.image[:, where], np.array(shape.color)[:, None].repeat(where.sum(), 1))
    np.testing.assert_allclose(scene.image[:, scene.mask == 0], 0.5)


def test_random_scenes_are_seeded_and_shapes_do_not_touch():
    a, b = random_scene(np.random.default_rng(5)), random_scene(np.random.default_rng(5))
    np.testing.assert_array_equal(a.mask, b.mask)
    scene = random_scene(np.random.default_rng(3), ["circle", "square", "triangle"])
    assert len(scene.shapes) == 3 and set(np.unique(scene.mask)) == {0, 1, 2, 3}
    union = sum(inside(s).astype(int) for s in scene.shapes)
    assert union.max() == 1


def test_inspect_images_gives_the_cli_object(tmp_path):
    for kind in ("vision-classifier", "vision-segmenter"):
        loaded = tiny_model(kind)
        folder = save_vision_bundle(tmp_path / kind, loaded.model)
        assert is_vision_model(folder)
        channels = loaded.config.channels
        picture = (np.random.default_rng(0).random((20, 20, 3)) * 255).astype(np.uint8)
        path = tmp_path / "p.png"
        path.write_bytes(png_bytes(picture if channels == 3 else picture[..., 0]))
        out = json.loads(json.dumps(inspect_images(folder, [str(path), str(path)], "cpu", attention=True)))
        assert out["model"]["kind"] == kind and out["device"] == "cpu" and len(out["inputs"]) == 2
        record = out["inputs"][0]
        assert len(record["tokens"]) == 17 and record["tokens"][0] == "[CLS]"
        attn = np.array(record["attention"]["encoder"])
        assert attn.shape == (2, 2, 17, 17)
        np.testing.assert_allclose(attn.sum(-1), 1.0, atol=1e-4)
        if kind == "vision-classifier":
            probs = record["prediction"]["probabilities"]
            assert record["prediction"]["label"] == max(probs, key=probs.get)
        else:
            mask = np.array(record["prediction"]["mask"])
            assert mask.shape == (16, 16) and sum(record["prediction"]["pixels"].values()) == 256
        bare = inspect_images(folder, [str(path)], "cpu", attention=False)
        assert "attention" not in bare["inputs"][0]
    assert not is_vision_model(tmp_path / "missing")
