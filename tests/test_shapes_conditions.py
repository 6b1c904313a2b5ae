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
