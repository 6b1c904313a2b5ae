"""Course-notebook ViT checkpoints: detection, import, and parity with nn.TransformerEncoder."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from transformer.vision import analyze_images
from transformer.vision.course_import import import_course_vit, infer_config, is_course_vit, load_course_vit_file
from transformer.vision.inspect import is_vision_model


class CourseViT(nn.Module):
    """The notebook's ViT / ViTSegmentation as its code intends: batch-first encoder, a patch is
    one grid cell's C × p × p pixels, the segmentation score of a patch repeated over its pixels."""

    def __init__(self, image_size, patch_size, num_classes, d_model, num_heads, num_layers, segmentation=False):
        super().__init__()
        self.patch_size, self.image_size, self.segmentation = patch_size, image_size, segmentation
        num_patches = (image_size // patch_size) ** 2
        self.patch_embedding = nn.Linear(patch_size * patch_size * 3, d_model)
        self.positional_embedding = nn.Parameter(torch.randn(1, num_patches + (0 if segmentation else 1), d_model))
        if not segmentation:
            self.cls_token = nn.Parameter(torch.randn(1, 1, d_model))
        layer = nn.TransformerEncoderLayer(d_model=d_model, nhead=num_heads, dim_feedforward=64, batch_first=True)
        self.transformer = nn.TransformerEncoder(layer, num_layers=num_layers, enable_nested_tensor=False)
        head = nn.Sequential(nn.Linear(d_model, num_classes))
        if segmentation:
            self.segmentation_head = head
        else:
            self.mlp_head = head

    def tokens(self, x):
        p = self.patch_size
        x = x.unfold(2, p, p).unfold(3, p, p)  # (B, C, gh, gw, p, p)
        x = x.permute(0, 2, 3, 1, 4, 5).reshape(x.size(0), -1, 3 * p * p)  # one patch = C × p × p
        x = self.patch_embedding(x)
        if not self.segmentation:
            x = torch.cat((self.cls_token.expand(x.size(0), -1, -1), x), dim=1)
        return x + self.positional_embedding

    def forward(self, x):
        """-> (logits, per-head weights per layer (B, H, T, T))."""
        h = self.tokens(x)
        weights = []
        for layer in self.transformer.layers:
            weights.append(layer.self_attn(h, h, h, need_weights=True, average_attn_weights=False)[1])
            h = layer(h)
        if not self.segmentation:
            return self.mlp_head(h[:, 0]), weights
        g = self.image_size // self.patch_size
        scores = self.segmentation_head(h).transpose(1, 2).reshape(x.size(0), -1, g, g)
        return nn.functional.interpolate(scores, scale_factor=self.patch_size, mode="nearest"), weights


@pytest.mark.parametrize("segmentation", [False, True])
def test_import_matches_nn_transformer_encoder(segmentation):
    torch.manual_seed(0)
    course = CourseViT(16, 4, 5, 32, 4, 2, segmentation).eval()
    state = course.state_dict()
    assert is_course_vit(state)
    loaded = import_course_vit(state, num_heads=4)
    assert loaded.config.image_size == 16 and loaded.config.patch_size == 4 and loaded.config.channels == 3
    assert loaded.config.task == ("segmentation" if segmentation else "classification")
    images = torch.rand(3, 3, 16, 16)
    with torch.no_grad():
        logits, weights = course(images)
    result = analyze_images(loaded, images.numpy())
    np.testing.assert_allclose(result.logits, logits.numpy(), atol=1e-5, rtol=0)
    reference = torch.stack(weights, dim=1).numpy()  # (B, L, H, T, T)
    np.testing.assert_allclose(result.attention, reference, atol=1e-5, rtol=0)
    assert ("segmentation_upsample_nearest" in loaded.notes) == segmentation


def test_config_inferred_and_wrong_shapes_refused():
    torch.manual_seed(1)
    state = CourseViT(32, 8, 10, 48, 4, 3).state_dict()
    config = infer_config(state, num_heads=6)
    assert (config.grid, config.num_layers, config.d_model, config.num_classes) == (4, 3, 48, 10)
    state["positional_embedding"] = torch.zeros(1, 15, 48)
    with pytest.raises(ValueError, match="square grid"):
        infer_config(state, num_heads=4)
    with pytest.raises(ValueError, match="not a course-style ViT"):
        import_course_vit({"w": torch.zeros(1)})


def test_checkpoint_file_is_recognised_and_read_safely(tmp_path):
    torch.manual_seed(2)
    course = CourseViT(16, 4, 3, 32, 4, 1).eval()
    path = tmp_path / "vit.pt"
    torch.save({"model_state_dict": course.state_dict(), "num_heads": 4}, path)
    assert is_vision_model(path)
    loaded = load_course_vit_file(path)
    assert loaded.format == "course-vit" and loaded.config.num_heads == 4
    assert "num_heads_4" not in loaded.notes and "channels_3" in loaded.notes  # heads came from the file
    images = torch.rand(1, 3, 16, 16)
    np.testing.assert_allclose(analyze_images(loaded, images.numpy()).logits, course(images)[0].detach(), atol=1e-5)
    other = tmp_path / "text.pt"
    torch.save({"embedding.weight": torch.zeros(4, 4)}, other)
    assert not is_vision_model(other)
