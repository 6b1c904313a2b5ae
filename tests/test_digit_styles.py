"""The digit styles used to train the digit model beyond scikit-learn's scans (transformer/vision/digit_styles.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer.vision import digit_styles as ds
from transformer.vision.digits import dataset_frame, upsample
from transformer.vision.train import parse_args, style_pool, train_batch

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def digits8():
    from sklearn.datasets import load_digits

    data = load_digits()
    return data.images[:20], data.target[:20]


def test_thicker_strokes_have_more_ink_and_thinner_less(digits8):
    ink = torch.from_numpy(ds.enlarge(digits8[0][0] / 16.0))[None, None]
    thick, thin = ds.change_thickness(ink, 5), ds.change_thickness(ink, -3)
    assert thick.shape == thin.shape == (1, 1, ds.WORK_SIDE, ds.WORK_SIDE)
    inked = lambda x: int((x > 0.5).sum())  # noqa: E731
    assert inked(thick) > 1.3 * inked(ink) and inked(thin) < 0.8 * inked(ink)
    assert float(thick.max()) <= 1.0 and float(thin.min()) >= 0.0
    assert torch.equal(ds.change_thickness(ink, 0), ink)


def test_enlarge_keeps_the_digit_and_its_range(digits8):
    big = ds.enlarge(upsample(digits8[0][:1])[0])
    assert big.shape == (ds.WORK_SIDE, ds.WORK_SIDE) and 0.0 <= big.min() and big.max() <= 1.0
    # framed back, the enlarged digit is the digit the model was trained on
    framed, _ = dataset_frame(big)
    assert np.abs(framed - upsample(digits8[0][:1])[0]).mean() < 0.05


def test_training_and_held_out_fonts_are_apart():
    train, held = ds.font_faces(), ds.font_faces(held_out=True)
    if not train or not held:
        pytest.skip("the DejaVu/Noto and Liberation fonts are not installed here")
    assert {f.name for f in train}.isdisjoint(f.name for f in held)
    assert all(f.path.name.startswith("Liberation") for f in held)
    assert not any("Math" in f.name or f.path.name.startswith("Liberation") for f in train)


def test_a_rendered_digit_is_ink_on_black_and_seeded():
    faces = ds.font_faces()
    if not faces:
        pytest.skip("no training fonts installed here")
    a = ds.render(faces[0], 7, np.random.default_rng(3))
    b = ds.render(faces[0], 7, np.random.default_rng(3))
    assert a.shape == (ds.WORK_SIDE, ds.WORK_SIDE) and np.array_equal(a, b)
    assert a.max() == pytest.approx(1.0, abs=0.05) and np.median(a) == 0.0


def test_small_digit_lands_off_centre_on_a_larger_page(digits8):
    ink = ds.enlarge(digits8[0][3] / 16.0)
    page = ds.on_page(ink, np.random.default_rng(0), small=True)
    assert page.shape[0] >= 2 * ink.shape[0] and page.shape[0] == page.shape[1]
    rows, cols = np.where(page > 0.2)
    assert rows.max() - rows.min() < 0.5 * page.shape[0]
    assert ink.sum() > page.sum() > 0  # the same digit, smaller


def test_a_photographed_digit_is_dark_ink_on_uneven_paper(digits8):
    ink = ds.enlarge(digits8[0][5] / 16.0)
    photo = ds.photographed(ink, np.random.default_rng(1))
    assert photo.shape == ink.shape and photo.dtype == np.float32
    assert 0.0 <= photo.min() and photo.max() <= 1.0
    assert photo[ink > 0.8].mean() < photo[ink < 0.05].mean() - 0.2  # ink darker than paper


def test_styled_digits_are_framed_like_uploads_and_seeded(digits8):
    images, labels = upsample(digits8[0]), digits8[1]
    a = ds.styled_digits(images[:5], labels[:5], 3, np.random.default_rng(7))
    b = ds.styled_digits(images[:5], labels[:5], 3, np.random.default_rng(7))
    assert a[0].shape == (15, 1, 32, 32) and a[0].dtype == np.float32 and a[1].dtype == np.int64
    assert np.array_equal(a[0], b[0]) and a[1].tolist() == np.repeat(labels[:5], 3).tolist()
    assert a[0].min() >= 0.0 and a[0].max() == pytest.approx(1.0, abs=1e-6)
    c = ds.styled_digits(images[:5], labels[:5], 3, np.random.default_rng(8))
    assert not np.array_equal(a[0], c[0])


def test_font_digits_give_every_digit_per_face():
    faces = ds.font_faces()[:2]
    if not faces:
        pytest.skip("no training fonts installed here")
    images, labels = ds.font_digits(faces, 2, np.random.default_rng(0))
    assert images.shape == (len(faces) * 20, 1, 32, 32)
    assert np.bincount(labels).tolist() == [2 * len(faces)] * 10


def test_style_flags_are_off_by_default_and_add_styled_digits_to_each_batch(digits8):
    args = parse_args(["--task", "digits", "--out", "x"])
    assert (args.style_copies, args.font_renders, args.style_batch) == (0, 0, None)
    split = (upsample(digits8[0]), digits8[1].astype(np.int64))
    assert style_pool(args, split, 0, 0, 0) is None
    args = parse_args(["--task", "digits", "--out", "x", "--style-copies", "2", "--style-batch", "6"])
    pool = style_pool(args, split, 0, args.style_copies, 0)
    assert pool[0].shape == (40, 1, 32, 32) and pool[1].shape == (40,)
    images, targets = torch.from_numpy(split[0][:4]), torch.from_numpy(split[1][:4])
    x, y = train_batch(args, images, targets, torch.Generator().manual_seed(0), pool)
    assert x.shape == (10, 1, 32, 32) and y[:4].tolist() == targets.tolist()


def test_styled_validation_is_scored_and_reported(digits8):
    from transformer.vision.model import VisionTransformer
    from transformer.vision.train import make_config, score, style_metrics

    args = parse_args(["--task", "digits", "--out", "x", "--style-copies", "1", "--font-renders", "1"])
    split = (upsample(digits8[0]), digits8[1].astype(np.int64))
    val_styled = style_pool(args, split, 10_000, 2, 0)
    measured = score(VisionTransformer(make_config(args)), tuple(t.numpy() for t in val_styled))
    assert 0.0 <= measured["main"] <= 1.0 and len(measured["accuracy_per_class"]) == 10
    reported = style_metrics(args, {"epoch": 3, "val": 0.9, "val_styled": 0.8})
    assert reported["validation_styled"] == 0.8
    assert reported["styles"]["copies_per_training_digit"] == 1 and reported["styles"]["styled_per_batch"] == 64
    assert not set(reported["styles"]["training_fonts"]) & set(reported["styles"]["held_out_fonts"])
    assert style_metrics(parse_args(["--task", "digits", "--out", "x"]), {}) == {}


def _ink_lean(picture: np.ndarray) -> float:
    """Mean column of the ink in the top third minus that in the bottom third (> 0: leaning right)."""
    rows = picture.shape[0] // 3
    cols = np.arange(picture.shape[1])
    centre = lambda part: float((part.sum(0) * cols).sum() / max(part.sum(), 1e-6))  # noqa: E731
    return centre(picture[:rows]) - centre(picture[-rows:])


def test_another_hand_slants_bends_and_keeps_the_digit():
    bar = np.zeros((ds.WORK_SIDE, ds.WORK_SIDE), dtype=np.float32)
    bar[8:56, 29:35] = 1.0  # an upright "1"
    drawn = [ds.another_hand(bar, np.random.default_rng(k)) for k in range(30)]
    assert all(d.shape == bar.shape and d.dtype == np.float32 and 0.0 <= d.min() and d.max() <= 1.0 for d in drawn)
    assert np.array_equal(drawn[0], ds.another_hand(bar, np.random.default_rng(0)))  # seeded
    assert not np.array_equal(drawn[0], drawn[1])
    leans = [_ink_lean(d) for d in drawn]
    assert _ink_lean(bar) == pytest.approx(0.0) and np.mean(leans) > 2.0  # most hands lean right
    assert min(leans) < 0 < max(leans)  # ... not all of them
    # the whole stroke stays on the picture, drawn at 0.8 of its size
    assert all(0.3 * bar.sum() < d.sum() < 1.1 * bar.sum() for d in drawn)
    assert all(d[:, :2].sum() == d[:, -2:].sum() == d[:2].sum() == d[-2:].sum() == 0 for d in drawn)


def test_hand_share_is_off_by_default_and_reaches_the_styles(digits8):
    from transformer.vision.train import style_metrics, style_mix

    images, labels = upsample(digits8[0][:5]), digits8[1][:5]
    plain = ds.styled_digits(images, labels, 2, np.random.default_rng(7))
    assert ds.StyleMix().hand == 0.0
    assert np.array_equal(plain[0], ds.styled_digits(images, labels, 2, np.random.default_rng(7), ds.StyleMix())[0])
    by_hand = ds.styled_digits(images, labels, 2, np.random.default_rng(7), ds.StyleMix(hand=1.0))
    assert by_hand[0].shape == plain[0].shape and not np.array_equal(by_hand[0], plain[0])
    args = parse_args(["--task", "digits", "--out", "x", "--style-copies", "1", "--hand", "0.6"])
    assert style_mix(args).hand == 0.6
    assert style_metrics(args, {"val_styled": 0.9})["styles"]["mix"]["hand"] == 0.6
    assert style_mix(parse_args(["--task", "digits", "--out", "x"])).hand == 0.0
