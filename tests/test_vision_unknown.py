"""The Vision page says when an uploaded picture does not look like a digit (rule and numbers:
ui/vision_unknown.py and bench/bench_vision_unknown.py)."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageDraw

from tests.app_helpers import open_app
from transformer.vision.digits import load_digits_splits
from ui.vision_unknown import fit_digit_space


def png(pixels: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def test_the_rule_keeps_held_out_digits_and_flags_noise():
    splits = load_digits_splits()
    space = fit_digit_space(splits.train[0], splits.val[0])  # threshold from validation digits
    test = space.residual(splits.test[0])
    assert (test > space.threshold).mean() <= 0.05  # unseen test digits: almost all look like digits
    noise = np.random.default_rng(0).random((20, *splits.test[0].shape[1:]))
    assert (space.residual(noise) > space.threshold).all()


def test_an_uploaded_noise_picture_is_said_not_to_look_like_a_digit_and_a_drawn_digit_is_not():
    at = open_app("vision")
    at.radio(key="vsource").set_value("upload").run()
    noise = np.random.default_rng(1).integers(0, 256, (96, 96, 3), dtype=np.uint8)
    at.file_uploader(key="vupload").upload("noise.png", png(noise), "image/png").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("does not look like anything the model knows" in w.value for w in at.warning)
    one = Image.new("L", (96, 96), 255)
    ImageDraw.Draw(one).line([48, 12, 48, 84], fill=0, width=9)  # a "1"
    at.file_uploader(key="vupload").upload("one.png", png(np.asarray(one)), "image/png").run()
    assert not any("does not look like anything the model knows" in w.value for w in at.warning)


def test_the_page_rule_keeps_styled_digits_and_still_flags_noise():
    from transformer.vision.digit_styles import styled_digits
    from ui.vision_unknown import fit_page_space

    space = fit_page_space()
    splits = load_digits_splits()
    styled, _ = styled_digits(splits.val[0][:120], splits.val[1][:120], 1, np.random.default_rng(11))
    assert (space.residual(styled) > space.threshold).mean() <= 0.15  # fitted on digits alone: ~0.6
    assert (space.residual(splits.val[0]) > space.threshold).mean() <= 0.05
    noise = np.random.default_rng(0).random((20, *splits.test[0].shape[1:]))
    assert (space.residual(noise) > space.threshold).all()
