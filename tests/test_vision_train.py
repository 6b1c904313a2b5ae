"""The vision training recipe's pure parts: loss weights and the learning-rate schedule."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from transformer.vision import shapes
from transformer.vision.config import VisionConfig
from transformer.vision.train import loss_weights, lr_at, make_config, parse_args


def test_background_weight_lowers_the_background_share_of_the_loss():
    config = VisionConfig(kind="vision-segmenter", channels=3, label_names=shapes.LABELS)
    weights = loss_weights(config, 0.3)
    assert weights.tolist() == pytest.approx([0.3, 1.0, 1.0, 1.0])
    # a wrong background pixel and a wrong circle pixel: the weighted loss counts the circle more
    logits = torch.tensor([[0.0, 2.0, 0.0, 0.0], [2.0, 0.0, 0.0, 0.0]])
    target = torch.tensor([0, 1])
    per_pixel = F.cross_entropy(logits, target, weight=weights, reduction="none")
    assert per_pixel[1] / per_pixel[0] == pytest.approx(1 / 0.3)
    assert loss_weights(config, 1.0) is None
    assert loss_weights(VisionConfig(), 0.3) is None  # a classifier has no background


def test_learning_rate_warms_up_then_decays_to_zero():
    assert lr_at(0.0, 1.0) < 0.05 and lr_at(0.05, 1.0) == pytest.approx(1.0)
    assert lr_at(0.5, 1.0) == pytest.approx(0.5 * (1 + torch.cos(torch.tensor(0.45 / 0.95 * torch.pi)).item()))
    assert lr_at(1.0, 1.0) == pytest.approx(0.0, abs=1e-12)


def test_shapes_command_defaults_keep_plain_cross_entropy():
    args = parse_args(["--task", "shapes", "--out", "x"])
    assert args.background_weight == 1.0 and args.patch_size is None


def test_recipe_options_reach_the_segmenter_config():
    args = parse_args(["--task", "shapes", "--out", "x", "--patch-size", "8", "--seg-hidden", "16", "--layers", "3"])
    config = make_config(args)
    assert (config.kind, config.patch_size, config.seg_hidden, config.num_layers) == ("vision-segmenter", 8, 16, 3)
    assert config.label_names == shapes.LABELS and config.channels == 3
