"""Hostile pictures (a decompression bomb, huge single-colour RGBA, 16-bit, truncated, animated):
one clear message on the Vision page and in the CLI, never an exception; decoded in a child
process, so the serving process's memory stays bounded (measured in a child of the test)."""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.app_helpers import ROOT, open_app
from transformer.vision.images import MAX_PIXELS, ImageError, prepare_image

VIT = ROOT / "assets" / "models" / "vit-digits"


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def blank_png(width: int, height: int, bit_depth: int = 1, colour: int = 0, fill: int = 0) -> bytes:
    """A PNG of one colour, its rows compressed one by one (the raw picture is never in memory):
    colour type 0 grey, 6 RGBA; 30,000 × 30,000 1-bit is ~110 KB."""
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[colour]
    row = b"\x00" + bytes([fill]) * ((width * channels * bit_depth + 7) // 8)
    packer = zlib.compressobj(9)
    body = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    header = struct.pack(">IIBBBBB", width, height, bit_depth, colour, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", body) + _chunk(b"IEND", b"")


def truncated_png() -> bytes:
    noise = (np.random.default_rng(0).random((200, 200)) * 255).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(noise).save(buffer, "PNG")
    return buffer.getvalue()[: len(buffer.getvalue()) // 2]


def animated_png() -> bytes:
    frames = [Image.new("RGB", (40, 40), colour) for colour in ("red", "blue", "green")]
    buffer = io.BytesIO()
    frames[0].save(buffer, "PNG", save_all=True, append_images=frames[1:], duration=100)
    return buffer.getvalue()


# name -> (bytes, refusal code or None when the picture is used, words the message contains)
ATTACKS = {
    "bomb_30k.png": (lambda: blank_png(30_000, 30_000), "too_many_pixels", "30000 × 30000"),
    "bomb_15k.png": (lambda: blank_png(15_000, 15_000), "too_many_pixels", "15000 × 15000"),
    "rgba_5k.png": (lambda: blank_png(5000, 5000, 8, 6, fill=200), None, ""),
    "deep_5k.png": (lambda: blank_png(5000, 5000, 16, 0, fill=128), None, ""),
    "truncated.png": (truncated_png, "damaged", "damaged"),
    "animated.png": (animated_png, "animated", "one frame"),
}
PAGE_WORDS = {
    "too_many_pixels": "the limit is 25 million pixels",
    "damaged": "damaged (perhaps cut off)",
    "animated": "animated picture",
}


@pytest.fixture(scope="module")
def pictures(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("hostile")
    out = {}
    for name, (make, _, _) in ATTACKS.items():
        out[name] = folder / name
        out[name].write_bytes(make())
    return out


@pytest.mark.parametrize("name", list(ATTACKS))
def test_each_attack_is_refused_or_used_with_a_clear_reason(pictures, name):
    _, code, words = ATTACKS[name]
    data = pictures[name].read_bytes()
    if code is None:
        out = prepare_image(data, 32, 1, digit_style=True)
        assert out.array.shape == (1, 32, 32) and out.original_size == (5000, 5000)
        assert np.isfinite(out.array).all()
        return
    with pytest.raises(ImageError, match=words) as info:
        prepare_image(data, 32, 1)
    assert info.value.code == code
    if code == "too_many_pixels":
        assert f"{MAX_PIXELS / 1e6:g} million" in str(info.value)


def test_huge_pictures_keep_their_look_after_shrinking():
    """The shrinking in PIL (premultiplied alpha, 16-bit kept deep) gives the colour a full decode would."""
    grey = prepare_image(blank_png(5000, 5000, 8, 6, fill=200), 32, 3)  # RGBA (200, 200, 200, 200)
    expected = (200 / 255) * (200 / 255) + (1 - 200 / 255)  # flattened onto white
    np.testing.assert_allclose(grey.array, expected, atol=2 / 255)
    deep = prepare_image(blank_png(5000, 5000, 16, 0, fill=128), 32, 1)  # every sample 0x8080
    np.testing.assert_allclose(deep.array, 0x8080 / 65535, atol=1e-4)
    assert "bits16" in deep.notes and "alpha" in grey.notes


MEASURE = textwrap.dedent(
    """
    import contextlib, io, json, resource, sys
    from transformer.cli.main import main

    def peak_mb(who):
        return resource.getrusage(who).ru_maxrss / 1024

    main(["inspect", "--checkpoint", sys.argv[1], "--image", sys.argv[2], "--attention", "none"])  # warm up
    before = peak_mb(resource.RUSAGE_SELF)
    records = []
    for path in sys.argv[3:]:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.TextIOWrapper(io.BytesIO())):
            status = main(["inspect", "--checkpoint", sys.argv[1], "--image", path, "--attention", "none"])
        records.append({"path": path, "status": status, "stderr": err.getvalue()})
    print(json.dumps({"records": records, "self_growth_mb": peak_mb(resource.RUSAGE_SELF) - before,
                      "self_mb": peak_mb(resource.RUSAGE_SELF), "children_mb": peak_mb(resource.RUSAGE_CHILDREN)}))
    """
)


def test_cli_gives_one_line_per_attack_and_its_memory_stays_bounded(pictures, tmp_path):
    """The CLI's --image over every attack, in a child of the test that measures its own peak
    memory: the pictures are decoded in grandchildren, so the CLI process itself does not grow."""
    small = tmp_path / "small.png"
    small.write_bytes(blank_png(20, 20, 8, 0, fill=90))
    paths = [str(pictures[name]) for name in ATTACKS]
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(VIT), str(small), *paths],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    for record, (name, (_, code, words)) in zip(report["records"], ATTACKS.items()):
        lines = record["stderr"].strip().splitlines()
        if code is None:
            assert record["status"] == 0 and not lines, (name, record)
        else:
            assert record["status"] == 2 and len(lines) == 1 and lines[0].startswith("error: "), (name, record)
            assert words in lines[0] and "Traceback" not in record["stderr"]
    # decoding all of them in this process took it from ~250 MB to ~900 MB before (issue 28)
    assert report["self_growth_mb"] < 100, report
    assert report["children_mb"] < report["self_mb"] + 1536, report  # each reader within its own limit


@pytest.mark.parametrize("name", list(ATTACKS))
def test_vision_page_shows_one_message_per_attack(pictures, name):
    _, code, _ = ATTACKS[name]
    at = open_app("vision")
    at.radio(key="vsource").set_value("upload").run()
    at.file_uploader(key="vupload").upload(name, pictures[name].read_bytes(), "image/png").run()
    assert not at.exception, [e.value for e in at.exception]
    if code is None:
        assert not at.error
        assert any("5000 × 5000" in c.value for c in at.caption)
    else:
        assert len(at.error) == 1 and PAGE_WORDS[code] in at.error[0].value, [e.value for e in at.error]
        assert "/tmp" not in at.error[0].value


PAGE_MEASURE = textwrap.dedent(
    """
    import json, resource, sys
    from pathlib import Path
    from tests.app_helpers import open_app

    at = open_app("vision")
    at.radio(key="vsource").set_value("upload").run()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    shown = []
    for path in sys.argv[1:]:
        at.file_uploader(key="vupload").upload(Path(path).name, Path(path).read_bytes(), "image/png").run()
        shown.append([len(at.exception), [e.value for e in at.error], [c.value for c in at.caption][:3]])
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - before
    print(json.dumps({"shown": shown, "self_growth_mb": grown}))
    """
)


def test_the_vision_page_server_stays_small_while_huge_pictures_are_decoded(pictures):
    """The page (AppTest, the server's side) in a child of the test that measures its own peak:
    the 5,000 × 5,000 RGBA and 16-bit pictures and the bombs are decoded (or refused) in readers."""
    names = ["rgba_5k.png", "deep_5k.png", "bomb_30k.png"]
    done = subprocess.run(
        [sys.executable, "-c", PAGE_MEASURE, *(str(pictures[n]) for n in names)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    for name, (exceptions, errors, _) in zip(names, report["shown"]):
        assert exceptions == 0 and len(errors) == (name.startswith("bomb")), (name, errors)
    assert report["self_growth_mb"] < 150, report  # decoding in the page's process took ~1 GB more (issue 28)
