"""The ViT: patches, shapes of every output, attention properties, bundles, maps, metrics."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.test_vision_helpers import tiny_model
from transformer.analysis.rollout import attention_rollout
from transformer.vision import analyze_images, load_vision_bundle, save_vision_bundle
from transformer.vision.config import VisionConfig
from transformer.vision.maps import (
    filter_components,
    patch_index,
    position_similarity,
    query_maps,
    rollout_maps,
    similarity_mosaic,
)
from transformer.vision.metrics import iou_per_class, patch_objects, same_object_share
from transformer.vision.patches import patchify, unpatchify


def test_patchify_round_trip_and_conv_order():
    images = torch.rand(3, 2, 12, 12)
    patches = patchify(images, 4)
    assert patches.shape == (3, 9, 2 * 16)
    assert torch.equal(unpatchify(patches, 4, 2, (3, 3)), images)
    # patch 4 = grid cell (1, 1): pixels 4..7 in both directions, flattened (channel, row, col)
    assert torch.equal(patches[:, 4], images[:, :, 4:8, 4:8].reshape(3, -1))
    # a linear patch embedding is a stride-p convolution with the same weights
    weight = torch.randn(5, 2 * 16)
    conv = F.conv2d(images, weight.view(5, 2, 4, 4), stride=4).flatten(2).transpose(1, 2)
    torch.testing.assert_close(patches @ weight.T, conv, atol=1e-5, rtol=1e-5)


def test_patchify_refuses_sizes_that_do_not_divide():
    with pytest.raises(ValueError, match="multiple of the patch size"):
        patchify(torch.zeros(1, 1, 10, 10), 4)


def test_classifier_outputs_and_attention_shapes():
    loaded = tiny_model()
    images = np.random.default_rng(0).random((2, 1, 16, 16), dtype=np.float32)
    result = analyze_images(loaded, images)
    assert result.attention.shape == (2, 2, 2, 17, 17)  # (B, L, H, 1 + P, 1 + P)
    np.testing.assert_allclose(result.attention.sum(-1), 1.0, atol=1e-5)
    assert result.logits.shape == (2, 10)
    np.testing.assert_allclose(result.probabilities.sum(1), 1.0, atol=1e-6)
    assert result.tokens[:3] == ("[CLS]", "0,0", "0,1") and len(result.tokens) == 17
    assert result.patches.shape == (2, 16, 16) and result.mask is None
    assert result.label(0) == str(int(result.probabilities[0].argmax()))


def test_segmenter_predicts_a_mask_per_pixel():
    loaded = tiny_model("vision-segmenter")
    images = np.random.default_rng(1).random((2, 3, 16, 16), dtype=np.float32)
    result = analyze_images(loaded, images)
    assert result.logits.shape == (2, 4, 16, 16)
    assert result.mask.shape == (2, 16, 16) and result.mask.max() < 4
    np.testing.assert_array_equal(result.mask, result.logits.argmax(1))


def test_upsample_head_repeats_each_patch_score():
    loaded = tiny_model("vision-segmenter", seg_head="upsample", class_token=False)
    result = analyze_images(loaded, np.random.default_rng(2).random((1, 3, 16, 16), dtype=np.float32))
    assert result.attention.shape[-1] == 16  # no class token
    logits = result.logits[0]
    np.testing.assert_array_equal(logits[:, 0:4, 0:4], np.broadcast_to(logits[:, :1, :1], (4, 4, 4)))


def test_wrong_image_shape_says_what_is_expected():
    with pytest.raises(ValueError, match=r"\(batch, 1, 16, 16\)"):
        analyze_images(tiny_model(), np.zeros((1, 3, 16, 16), dtype=np.float32))


def test_head_switch_off_changes_the_prediction_and_all_on_changes_nothing():
    loaded = tiny_model()
    images = np.random.default_rng(3).random((1, 1, 16, 16), dtype=np.float32)
    base = analyze_images(loaded, images)
    same = analyze_images(loaded, images, head_mask=np.ones((2, 2)))
    np.testing.assert_allclose(same.probabilities, base.probabilities, atol=1e-6)
    off = np.ones((2, 2))
    off[0, 1] = 0
    changed = analyze_images(loaded, images, head_mask=off)
    assert np.abs(changed.probabilities - base.probabilities).max() > 1e-4


def test_bundle_round_trip_gives_the_same_outputs(tmp_path):
    loaded = tiny_model("vision-segmenter")
    save_vision_bundle(tmp_path / "m", loaded.model, {"test": {"mean_iou_shapes": 0.5}})
    again = load_vision_bundle(tmp_path / "m")
    assert again.config == loaded.config and again.metrics["test"]["mean_iou_shapes"] == 0.5
    assert '"kind": "vision-segmenter"' in (tmp_path / "m" / "config.json").read_text()
    images = np.random.default_rng(4).random((1, 3, 16, 16), dtype=np.float32)
    np.testing.assert_array_equal(analyze_images(again, images).logits, analyze_images(loaded, images).logits)


def test_config_checks():
    with pytest.raises(ValueError, match="multiple of patch_size"):
        VisionConfig(image_size=30, patch_size=8)
    with pytest.raises(ValueError, match="kind"):
        VisionConfig(kind="classifier")
    assert VisionConfig().num_tokens == 17 and VisionConfig().task == "classification"


def test_rollout_rows_sum_to_one_and_maps_read_the_right_row():
    loaded = tiny_model()
    attn = analyze_images(loaded, np.random.default_rng(5).random((1, 1, 16, 16), dtype=np.float32)).attention[0]
    rolled = attention_rollout(attn)
    np.testing.assert_allclose(rolled.sum(-1), 1.0, atol=1e-5)
    maps = rollout_maps(attn, 0, 4, 1)
    assert maps.shape == (2, 4, 4)
    np.testing.assert_allclose(maps[1].ravel(), rolled[1, 0, 1:], atol=1e-7)
    q = query_maps(attn, 1 + patch_index(2, 3, 4), 4, 1)
    np.testing.assert_array_equal(q[1, 0].ravel(), attn[1, 0, 1 + 11, 1:])


def test_position_similarity_and_mosaic():
    pos = np.random.default_rng(6).normal(size=(9, 8))
    sim = position_similarity(pos)
    np.testing.assert_allclose(np.diag(sim), 1.0, atol=1e-6)
    mosaic = similarity_mosaic(sim, 3)
    assert mosaic.shape == (11, 11) and np.isnan(mosaic[3]).all()
    np.testing.assert_allclose(mosaic[4:7, 8:11].ravel(), sim[5], atol=1e-6)  # tile (1, 2) = patch 5


def test_filter_components_are_orthonormal():
    weight = np.random.default_rng(7).normal(size=(16, 3 * 4 * 4))
    comps, explained = filter_components(weight, 3, 4, 5)
    assert comps.shape == (5, 3, 4, 4)
    flat = comps.reshape(5, -1)
    np.testing.assert_allclose(flat @ flat.T, np.eye(5), atol=1e-6)
    assert np.all(np.diff(explained) <= 1e-12) and 0 < explained.sum() <= 1


def test_iou_and_same_object_share():
    true = np.array([[0, 1], [1, 1]])
    pred = np.array([[1, 1], [0, 1]])
    iou = iou_per_class(pred, true, 3)
    assert iou[1] == pytest.approx(2 / 4) and iou[0] == 0 and np.isnan(iou[2])
    objects = np.zeros((4, 4), dtype=int)
    objects[:2, :2] = 1  # object 1 fills patch 0 of a 2×2 grid of 2×2 patches
    objects[2:, :] = 2  # object 2 fills patches 2 and 3
    assert patch_objects(objects, 2).tolist() == [1, 0, 2, 2]
    attn = np.full((1, 5, 5), 0.2)  # uniform over the class token and 4 patches
    share, size = same_object_share(attn, objects[None], 2, 1)
    # patch 0 gives 0.2 to itself; patches 2 and 3 give 0.4 to object 2: mean (0.2 + 0.4 + 0.4) / 3
    assert share == pytest.approx(1 / 3) and size == pytest.approx((0.25 + 0.5 + 0.5) / 3)
