"""Shape scenes over a wider range (small objects, noise up to 0.2, up to 6 objects) and the
segmenter's mean IoU per condition in metrics.json."""

from __future__ import annotations

import json

import numpy as np
import pytest

from transformer.vision import shapes
from transformer.vision.train import main as train_main


def scenes(conditions, n=150, seed=0):
    rng = np.random.default_rng(seed)
    return [shapes.random_scene(rng, conditions=conditions) for _ in range(n)]


def test_conditions_draw_what_they_say():
    small = scenes(shapes.CONDITIONS["small objects (about 2-7 px across)"])
    assert all(s.size < shapes.SIZES[s.kind][0] for scene in small for s in scene.shapes)  # below the first range
    assert min(s.size for scene in small for s in scene.shapes) < 1.5
    crowded = scenes(shapes.CONDITIONS["4-6 objects"])
    assert min(len(s.shapes) for s in crowded) >= 3 and max(len(s.shapes) for s in crowded) == 6
    assert np.mean([len(s.shapes) for s in crowded]) > 4
    wide = scenes(shapes.WIDE)
    assert {len(s.shapes) for s in wide} >= {1, 6}
    for scene in wide:  # masks still match the drawn shapes exactly, whatever the size
        for i, shape in enumerate(scene.shapes):
            assert (scene.objects == i + 1).sum() == shapes.inside(shape).sum()


def test_noise_follows_the_condition():
    def spread(conditions):
        rng = np.random.default_rng(1)
        scene = shapes.random_scene(rng, kinds=[], conditions=conditions)  # background only
        return float(scene.image.std(axis=(1, 2)).mean())

    assert spread(shapes.CONDITIONS["noise 0.2"]) > 3 * spread(
        shapes.CONDITIONS["default (1-3 objects, first size range, noise 0.05)"]
    )


def test_training_over_the_wide_range_reports_iou_per_condition(tmp_path):
    out = tmp_path / "seg"
    train_main(["--task", "shapes", "--out", str(out), "--epochs", "1", "--train-scenes", "64", "--scenes", "wide",
                "--condition-scenes", "8", "--max-minutes", "0.2", "--seg-hidden", "8", "--patch-size", "8"])  # fmt: skip
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["scenes"] == "wide"
    assert set(metrics["test_by_condition"]) == set(shapes.CONDITIONS)
    for measured in metrics["test_by_condition"].values():
        assert measured["scenes"] == 8 and 0.0 <= measured["mean_iou_shapes"] <= 1.0


def test_going_on_from_a_trained_segmenter_keeps_its_sizes_and_refuses_a_classifier(tmp_path):
    first, second = tmp_path / "seg", tmp_path / "seg2"
    small = ["--epochs", "1", "--train-scenes", "32", "--scenes", "wide", "--condition-scenes", "4"]
    small += ["--max-minutes", "0.1", "--seg-hidden", "8", "--patch-size", "8", "--d-model", "16", "--layers", "1"]
    train_main(["--task", "shapes", "--out", str(first), *small])
    train_main(["--task", "shapes", "--out", str(second), *small, "--init-from", str(first), "--noise-max", "0.3",
                "--d-model", "32"])  # fmt: skip
    config = json.loads((second / "config.json").read_text())
    assert config["d_model"] == 16 and config["num_layers"] == 1  # the model's own sizes, not the options
    assert json.loads((second / "metrics.json").read_text())["initialised_from"] == str(first)
    with pytest.raises(SystemExit, match="not classification"):
        train_main(["--task", "digits", "--out", str(tmp_path / "d"), "--init-from", str(first), "--epochs", "1"])


def test_small_share_replaces_that_share_of_the_training_scenes_with_small_objects():
    from types import SimpleNamespace

    from transformer.vision.train import load_data

    args = SimpleNamespace(task="shapes", train_scenes=40, seed=0, scenes="wide", noise_max=None, small_share=0.25)
    data = load_data(args)
    plain = load_data(SimpleNamespace(**{**vars(args), "small_share": 0.0}))
    assert len(data["train"][0]) == 40
    np.testing.assert_array_equal(data["train"][0][:30], plain["train"][0][:30])  # the first 30 as before
    np.testing.assert_array_equal(data["val"][0], plain["val"][0])  # validation untouched
    first_range = min(low for low, _ in shapes.SIZES.values())
    for objects in data["train"][2][30:]:  # every object of the last 10 is below the first size range
        areas = np.bincount(objects.ravel())[1:]
        assert areas.max() < np.pi * first_range**2


def test_condition_scenes_for_validation_are_not_the_test_scenes(tmp_path):
    out = tmp_path / "seg"
    train_main(["--task", "shapes", "--out", str(out), "--epochs", "1", "--train-scenes", "32", "--scenes", "wide",
                "--condition-scenes", "6", "--max-minutes", "0.1", "--seg-hidden", "8", "--patch-size", "8",
                "--d-model", "16", "--layers", "1", "--small-share", "0.5"])  # fmt: skip
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["validation_by_condition"]) == set(metrics["test_by_condition"]) == set(shapes.CONDITIONS)
    small = shapes.CONDITIONS[shapes.SMALL_OBJECTS]
    drawn = {
        split: shapes.scene_batch(np.random.default_rng(base + 1_000), 6, small)[0]
        for split, base in (("validation", 50_000), ("test", 30_000))
    }
    assert not np.array_equal(drawn["validation"], drawn["test"])
