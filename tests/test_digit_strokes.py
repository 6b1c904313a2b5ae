"""Digits written with a pen (transformer/vision/digit_strokes.py), a training source for the digit model."""

from __future__ import annotations

import numpy as np
import torch

from transformer.vision import digit_strokes as dst
from transformer.vision.digit_styles import StyleMix
from transformer.vision.train import parse_args, style_metrics, style_pool

torch.set_num_threads(1)


def test_every_digit_has_several_written_forms_inside_the_box():
    assert sorted(dst.ALLOGRAPHS) == list(range(10))
    assert all(len(forms) >= 2 for forms in dst.ALLOGRAPHS.values())
    points = np.asarray([p for forms in dst.ALLOGRAPHS.values() for form in forms for stroke in form for p in stroke])
    assert points.min() >= -0.05 and points.max() <= 1.05
    assert len(dst.forms()) == sum(len(f) for f in dst.ALLOGRAPHS.values())


def test_a_written_digit_is_seeded_ink_on_black_within_its_box():
    a = dst.written(4, 1, np.random.default_rng(3))
    assert a.shape == (dst.WORK_SIDE, dst.WORK_SIDE) and a.dtype == np.float32
    assert np.array_equal(a, dst.written(4, 1, np.random.default_rng(3)))
    assert not np.array_equal(a, dst.written(4, 1, np.random.default_rng(4)))
    assert a.max() == 1.0 and np.median(a) == 0.0
    rows, cols = np.nonzero(a > 0.5)
    side = dst.WORK_SIDE
    assert 0.5 * side < rows.max() - rows.min() < 0.95 * side  # 60-85 % of the side high, with the pen
    assert cols.min() > 0 and cols.max() < side - 1  # nothing cut at the edges


def test_forms_of_one_digit_differ():
    rng = np.random.default_rng(0)
    one_plain = dst.written(1, 0, rng)
    one_with_base = dst.written(1, 2, np.random.default_rng(0))
    assert one_with_base.sum() > 1.5 * one_plain.sum()  # a flag and a base add ink


def test_stroke_digits_are_framed_and_labelled_per_form():
    images, labels = dst.stroke_digits(2, np.random.default_rng(1), StyleMix(hand=0.5))
    assert images.shape == (2 * len(dst.forms()), 1, 32, 32) and images.dtype == np.float32
    assert np.bincount(labels).tolist() == [2 * len(dst.ALLOGRAPHS[d]) for d in range(10)]
    assert images.min() >= 0.0 and images.max() <= 1.0 + 1e-6
    assert dst.stroke_digits(0, np.random.default_rng(1))[0].shape == (0, 1, 32, 32)


def test_stroke_renders_join_the_training_pool_and_are_reported():
    from sklearn.datasets import load_digits

    from transformer.vision.digits import upsample

    data = load_digits()
    split = (upsample(data.images[:5]), data.target[:5].astype(np.int64))
    args = parse_args(["--task", "digits", "--out", "x", "--stroke-renders", "1"])
    assert parse_args(["--task", "digits", "--out", "x"]).stroke_renders == 0
    pool = style_pool(args, split, 0, 0, 0, args.stroke_renders)
    assert pool[0].shape == (len(dst.forms()), 1, 32, 32)
    reported = style_metrics(args, {"val_styled": 0.9})["styles"]
    assert reported["renders_per_written_form"] == 1 and reported["written_forms"] == len(dst.forms())
