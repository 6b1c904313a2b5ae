"""A tiny ViT and a tiny Marian folder (random weights, zipped) opened on the Checkpoints page: the
page shows the largest difference against ``transformers`` as it does for the text families (ViT:
every layer's attention and the class-token logits on a picture the check draws; Marian: encoder
self, decoder self and cross attention and the logits with a forced decoder prefix), and "Use this
model" puts the model where the Vision and Translate pages find it."""

from __future__ import annotations

import pytest
import torch

from tests.hf_models import tiny_marian_config
from tests.test_page_checkpoints_hf import checkpoints_page, shown, upload_zip, zipped
from transformer.hf.reference import ENCODER, check_picture, reference_check
from ui.session import UPLOADS_KEY, upload_key

transformers = pytest.importorskip("transformers")

TOLERANCE = 1e-5
LABELS = ("cat", "dog", "bird")


def _randomise(model, norm_weight: str) -> None:
    """Random weights everywhere (LayerNorm scales near 1), so that no head is uniform."""
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_((1.0 if norm_weight in name and name.endswith("weight") else 0.0) + 0.3 * torch.randn_like(p))


@pytest.fixture(scope="module")
def vit_folder(tmp_path_factory):
    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("hf") / "tiny-vit"
    config = transformers.ViTConfig(
        image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, id2label=dict(enumerate(LABELS)), label2id={n: i for i, n in enumerate(LABELS)},
    )  # fmt: skip
    model = transformers.ViTForImageClassification(config)
    _randomise(model, "layernorm")
    model.save_pretrained(folder)
    processor = transformers.ViTImageProcessor(
        size={"height": 32, "width": 32}, image_mean=[0.4, 0.5, 0.6], image_std=[0.2, 0.25, 0.3]
    )
    processor.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def marian_folder(tmp_path_factory):
    pytest.importorskip("sentencepiece")
    from tests.test_page_translate_imported import write_tokenizer

    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("hf") / "tiny-opus-mt"
    folder.mkdir()
    tokenizer = write_tokenizer(folder)
    pad = tokenizer.vocab.pad_id
    config = tiny_marian_config(len(tokenizer.vocab), pad, architectures=["MarianMTModel"])
    model = transformers.MarianMTModel(config)
    _randomise(model, "layer_norm")
    model.save_pretrained(folder)
    return folder


def metrics(at) -> dict[str, float]:
    return {m.label: float(m.value) for m in at.metric if m.value != "—"}


def test_the_check_picture_has_the_models_size_and_structure():
    picture = check_picture(3, 32)
    assert picture.shape == (1, 3, 32, 32)
    assert float(picture.min()) >= 0 and float(picture.max()) <= 1
    assert all(float(picture[0, c].std()) > 0.1 for c in range(3))  # no flat channel
    assert check_picture(1, 224).shape == (1, 1, 224, 224)


def test_a_zipped_vit_shows_the_reference_check_and_goes_to_the_vision_page(vit_folder):
    at = upload_zip(checkpoints_page(), "tiny-vit.zip", zipped(vit_folder))
    assert not at.error, shown(at.error)
    assert "Hugging Face model: ViT" in [h.value for h in at.subheader]
    found = metrics(at)
    assert found["Largest attention difference"] <= TOLERANCE
    assert found["Largest logits difference"] <= TOLERANCE
    captions = shown(at.caption)
    assert any("ViTForImageClassification" in c and "32 × 32" in c and "17 tokens" in c for c in captions)
    assert any(c.startswith("Per layer: 1: ") and ", 2: " in c for c in captions)
    assert any("Equal within 1e-5" in s for s in shown(at.success))
    assert any("Vision page" in c for c in captions)
    at.button(key="ckpt_use").click().run()
    assert not at.exception and not at.error, ([e.value for e in at.exception], shown(at.error))
    key = upload_key("tiny-vit.zip")
    assert type(at.session_state[UPLOADS_KEY][key]).__name__ == "VisionModel"
    assert any(key in s for s in shown(at.success))
    at.switch_page("pages/vision.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert key in at.selectbox(key="vmodel").options


def test_a_zipped_marian_shows_every_kind_of_attention_checked_and_translates(marian_folder):
    at = upload_zip(checkpoints_page(), "tiny-opus-mt.zip", zipped(marian_folder))
    assert not at.error, shown(at.error)
    assert "Hugging Face model: Marian" in [h.value for h in at.subheader]
    found = metrics(at)
    assert found["Largest attention difference"] <= TOLERANCE
    assert found["Largest logits difference"] <= TOLERANCE
    captions = shown(at.caption)
    assert any("MarianMTModel" in c and "the movie was great" in c and "4 decoder tokens" in c for c in captions)
    parts = next(c for c in captions if c.startswith("Encoder self-attention"))
    assert "decoder self-attention" in parts and "cross-attention" in parts
    assert any("Equal within 1e-5" in s for s in shown(at.success))
    assert any("Translate page" in c for c in captions)
    at.button(key="ckpt_use").click().run()
    assert not at.exception and not at.error, ([e.value for e in at.exception], shown(at.error))
    at.run()
    key = upload_key("tiny-opus-mt.zip")
    assert at.sidebar.selectbox(key="model").value == key
    at.switch_page("pages/translate.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert key in at.radio(key="tr_model").options


def test_the_korean_page_names_the_kinds_of_attention(marian_folder):
    at = upload_zip(checkpoints_page("ko"), "tiny-opus-mt.zip", zipped(marian_folder))
    assert not at.error, shown(at.error)
    captions = shown(at.caption)
    assert any(c.startswith("인코더 셀프 어텐션") and "교차 어텐션" in c for c in captions)


def test_the_check_itself_reports_each_kind_of_attention(marian_folder):
    from transformer.hf import load_hf_folder

    loaded = load_hf_folder(marian_folder)
    check = reference_check(marian_folder, loaded)
    assert check.reference == "MarianMTModel" and check.prefix == 4 and len(check.per_layer) == 4
    assert dict(check.parts)[ENCODER] <= TOLERANCE and check.attention == max(d for _, d in check.parts)
    with torch.no_grad():  # a model that differs from its folder is caught
        loaded.model.decoder.layers[0].cross_attn.w_q.weight.mul_(1.5)
    assert reference_check(marian_folder, loaded).attention > 1e-3
