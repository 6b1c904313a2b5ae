"""The Checkpoints page names each imported model's kind and the pages that run it (issue 40, item 7:
a GPT-2 and a BERT masked LM were sent to "Playground, Attention, Masks and Classifier" and the masked
LM was called a "classifier"); the Classifier page says the same for a model without a class head."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.app_helpers import open_app
from tests.hf_models import make_folder
from tests.test_page_checkpoints_hf import checkpoints_page, shown, upload_zip, use, zipped
from transformer.hf.importer import load_hf_folder
from ui.model_pages import model_kind
from ui.session import upload_key

pytest.importorskip("transformers")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def fake(kind: str, has_head: bool = True, head: str | None = None, vocab: object = ()) -> SimpleNamespace:
    return SimpleNamespace(config=SimpleNamespace(kind=kind, has_head=has_head), head=head, vocab=vocab)


def test_each_kind_of_model_is_told_apart():
    assert model_kind(fake("language-model", head="language-model")) == "language-model"
    assert model_kind(fake("classifier", has_head=False, head="masked-lm")) == "masked-lm"
    assert model_kind(fake("classifier", head="sequence-classification")) == "classifier"
    assert model_kind(fake("classifier", has_head=False)) == "encoder"
    assert model_kind(fake("encoder-decoder")) == "encoder-decoder"
    assert model_kind(fake("vision-classifier", vocab=None)) == "vision"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    return {kind: make_folder(kind, root / f"tiny-{kind}")[0] for kind in ("bert-mlm", "gpt2")}


def page_text(at) -> str:
    return "\n".join(shown(at.caption) + shown(at.markdown) + shown(at.info))


def test_a_masked_lm_is_sent_to_fill_in_the_blank_and_not_called_a_classifier(folders):
    at = upload_zip(checkpoints_page(), "tiny-bert-mlm.zip", zipped(folders["bert-mlm"]))
    before = page_text(at)
    assert "Kind: masked language model (fill in the blank). Once used" in before
    assert "these pages run it: Fill in the blank, Attention and Masks." in before
    after = page_text(use(at))
    assert "hugging-face, masked language model (fill in the blank), d_model 32" in after
    assert "Explore it on: Fill in the blank, Attention and Masks." in after
    assert "Classifier" not in before + after and ", classifier," not in after


def test_a_gpt2_is_sent_to_generate_in_korean_too(folders):
    at = upload_zip(checkpoints_page(), "tiny-gpt2.zip", zipped(folders["gpt2"]))
    assert "these pages run it: Generate, Attention, Head atlas, Masks and Playground." in page_text(at)
    at = upload_zip(checkpoints_page("ko"), "tiny-gpt2.zip", zipped(folders["gpt2"]))
    assert "종류: 언어 모델(다음 토큰 예측)." in page_text(at) and "생성, 어텐션" in page_text(at)


def test_the_classifier_page_names_the_pages_for_a_masked_lm(folders):
    key = upload_key("tiny-bert-mlm")
    at = open_app("classifier", uploads={key: load_hf_folder(folders["bert-mlm"])}, chosen=key)
    info = shown(at.info)
    assert any("masked language model (fill in the blank)" in i and "Fill in the blank" in i for i in info), info
