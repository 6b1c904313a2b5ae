"""The Vision page on an imported tiny ViT (ViTForImageClassification with 1,000 named classes, random
weights, its own preprocessor_config.json) put in the session's upload registry as a Checkpoints import
would: its own size, patch size, normalisation and class names, and probabilities equal to
``transformers``' within 1e-5 on the uploaded picture."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image
from streamlit.testing.v1 import AppTest

from tests.app_helpers import array, figures, open_app, texts
from transformer.hf import load_hf_folder
from ui.session import upload_key

transformers = pytest.importorskip("transformers")

KEY = upload_key("tiny-vit")
SIZE, PATCH, CLASSES = 32, 8, 1000
MEAN, STD = [0.4, 0.5, 0.6], [0.2, 0.25, 0.3]
LABELS = [f"class {i:03d} {name}" for i, name in zip(range(CLASSES), ["tabby cat", "goldfish", "lemon"] * 334)]
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def vit(tmp_path_factory):
    """(our imported model, transformers' model read back eager) from one folder."""
    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("vit_page")
    config = transformers.ViTConfig(
        image_size=SIZE, patch_size=PATCH, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, id2label=dict(enumerate(LABELS)), label2id={n: i for i, n in enumerate(LABELS)},
    )  # fmt: skip
    model = transformers.ViTForImageClassification(config)
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_((1.0 if "layernorm" in name and name.endswith("weight") else 0.0) + 0.3 * torch.randn_like(p))
    model.save_pretrained(folder)
    processor = transformers.ViTImageProcessor(size={"height": SIZE, "width": SIZE}, image_mean=MEAN, image_std=STD)
    processor.save_pretrained(folder)
    reference = transformers.ViTForImageClassification.from_pretrained(folder, attn_implementation="eager").eval()
    return load_hf_folder(folder), reference


def picture() -> np.ndarray:
    """(SIZE, SIZE, 3) uint8: a picture already of the model's size (nothing is resized)."""
    rng = np.random.default_rng(3)
    pixels = rng.integers(0, 256, (SIZE, SIZE, 3), dtype=np.uint8)
    pixels[8:20, 10:24] = (230, 180, 30)
    return pixels


def png(pixels: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG")
    return buffer.getvalue()


def open_vision(uploads: dict) -> AppTest:
    return open_app("vision", uploads=uploads)


def test_imported_vit_shows_its_labels_and_transformers_probabilities(vit):
    ours, reference = vit
    at = open_vision({KEY: ours})
    assert KEY in at.selectbox(key="vmodel").options
    at.selectbox(key="vmodel").set_value(KEY).run()
    assert at.radio(key="vsource").options == ["Upload", "Camera"]  # its own pictures, not the digits
    about = " ".join(texts(at.caption))
    assert "32×32 pictures with 3 channels, in patches of 8×8" in about
    assert "mean 0.400, 0.500, 0.600 and std 0.200, 0.250, 0.300" in about and "1,000 classes" in about
    pixels = picture()
    at.file_uploader(key="vupload").upload("picture.png", png(pixels), "image/png").run()
    assert not at.exception and not at.error, [e.value for e in at.exception] + texts(at.error)
    with torch.no_grad():
        x = torch.from_numpy(pixels).permute(2, 0, 1).float()[None] / 255
        normalised = (x - torch.tensor(MEAN)[:, None, None]) / torch.tensor(STD)[:, None, None]
        probs = torch.softmax(reference(pixel_values=normalised).logits[0], -1).numpy()
    bars = figures(at)["vision-probabilities"]["data"][0]
    top = np.argsort(-probs)[:10]
    assert list(bars["x"]) == [LABELS[k] for k in top]  # the 10 most likely of 1,000, by name
    assert np.abs(array(bars["y"]) - probs[top]).max() < TOLERANCE
    assert any("The 10 most likely of 1000 classes" in c for c in texts(at.caption))
    assert at.metric[0].value == LABELS[top[0]]
    # every head over the picture: 2 layers × 4 heads on a 4 × 4 patch grid
    assert "vision-overlay" in figures(at) and at.selectbox(key="vhead").options == ["1", "2", "3", "4"]
