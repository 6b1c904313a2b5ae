"""SmolLM2-135M-Instruct (the bundled GGUF model) on Generate (continuation and chat), the head atlas and
the residual stream, in English and Korean (issue 48, items 2-4; issue 50's items on these pages).
Skipped when the model file is absent."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.app_helpers import array, figures, open_app, texts
from ui.language_models import PRETRAINED_LM
from ui.models import MODELS_DIR

FOLDER = MODELS_DIR / PRETRAINED_LM
pytestmark = [
    pytest.mark.skipif(not any(FOLDER.glob("*.gguf")), reason="SmolLM2's GGUF file is not bundled here"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]
TIMEOUT = 400  # the first test loads and dequantises the model on one CPU thread


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    torch.set_num_threads(1)


def run(at):
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def said(at) -> str:
    return " ".join(texts(at.caption) + texts(at.markdown))


def test_generate_starts_on_smollm2_in_english_and_says_what_it_is():
    at = open_app("generate", timeout=TIMEOUT)
    assert at.radio(key="gen_model").value == PRETRAINED_LM
    words = said(at)
    assert "pretrained by others" in words and "English only" in words and "4-bit" in words
    assert {"generate-next", "generate-rows", "generate-mask"} <= set(figures(at))
    rows = figures(at)["generate-rows"]["data"][0]["y"]
    assert len(rows) == 4 * 9 and rows[0].startswith("L1 H1")  # four layers of nine heads, not 270 rows
    at.selectbox(key="gen_layers").set_value((29, 30))
    rows = figures(run(at))["generate-rows"]["data"][0]["y"]
    assert len(rows) == 2 * 9 and rows[0].startswith("L29 H1")


def test_chat_answers_through_the_template_and_maps_answer_to_question():
    at = open_app("generate", timeout=TIMEOUT, state={"gen_view": "chat"})
    answer = [h.value for h in at.get("html") if "Model:" in h.value]
    assert answer and "Seoul" in answer[-1]
    assert any("ended its turn" in c for c in texts(at.caption))
    fig = figures(at)["generate-answer"]["data"][0]
    rows = array(fig["z"])
    assert rows.shape[1] == 7  # What ␣is ␣the ␣capital ␣of ␣Korea ?
    assert [label.split(":", 1)[1] for label in fig["x"]] == ["What", "␣is", "␣the", "␣capital", "␣of", "␣Korea", "?"]
    np.testing.assert_allclose(rows.sum(-1), 1.0, atol=1e-4)
    assert len(fig["y"]) == rows.shape[0] and "Seoul" in " ".join(fig["y"])
    at.select_slider(key="gen_chat_layers").set_value((20, 30))
    again = array(figures(run(at))["generate-answer"]["data"][0]["z"])
    assert again.shape == rows.shape and not np.allclose(again, rows)  # other layers, same answer (kept, not rerun)


def test_korean_starts_on_a_model_that_reads_korean_and_smollm2_says_english_only():
    at = open_app("generate", lang="ko", timeout=TIMEOUT)
    assert at.radio(key="gen_model").value in ("gemma-3-270m", "review-lm")  # Gemma 3 when its packages are here
    at.radio(key="gen_model").set_value(PRETRAINED_LM)
    assert "영어만 읽" in said(run(at))


def test_residual_lens_shows_where_paris_wins_and_who_wrote_it():
    at = open_app("residual", timeout=TIMEOUT)
    assert at.selectbox(key="rs_model").value == PRETRAINED_LM
    assert at.text_area(key="rs_text").value == "The capital of France is"
    lens = figures(at)["residual-lens"]["data"][0]
    assert len(lens["y"]) == 31  # the embedding and 30 layers
    assert lens["text"][-1][-1] == "␣Paris"
    settles = [m for m in texts(at.markdown) if "becomes the top guess after layer 30 of 30" in m]
    assert len(settles) == 1 and "Paris" in settles[0]
    assert not any("⟨pad⟩" in cell or "\\x" in cell for row in lens["text"] for cell in row)
    at.segmented_control(key="rs_view").set_value("contributions")
    run(at)
    writers = [m for m in texts(at.markdown) if m.startswith("What wrote")]
    assert len(writers) == 1 and "Paris" in writers[0] and " H" in writers[0]


def test_residual_in_korean_reads_korean_on_review_lm():
    at = open_app("residual", lang="ko", timeout=TIMEOUT, rs_model="review-lm")  # Korean opens on Gemma 3 otherwise
    assert at.selectbox(key="rs_model").value == "review-lm"
    assert at.text_area(key="rs_text").value == "배우들 연기가 정말 좋았고 이야기가 끝까지"
    assert "residual-lens" in figures(at)


def test_atlas_names_smollm2s_heads_ten_layers_at_a_time():
    at = open_app("head_atlas", timeout=TIMEOUT, state={"atlas_model": PRETRAINED_LM})
    found = [m for m in texts(at.markdown) if "Heads found" in m]
    assert len(found) == 1 and "induction" in found[0].lower()
    assert "L19 H7" in found[0]  # the induction head transformers' GGUF loader shows too (0-based 18, 6)
    grid = figures(at)["atlas-grid"]["data"][0]
    assert len(grid["y"]) == 10 and grid["y"][0].endswith("1")
    at.segmented_control(key="atlas_window").set_value("21–30")
    grid = figures(run(at))["atlas-grid"]["data"][0]
    assert len(grid["y"]) == 10 and grid["y"][0].endswith("21")


def test_masks_language_model_section_starts_on_smollm2_in_english():
    at = open_app("masks", timeout=TIMEOUT, by_link=True, text="The cat sat on the mat.", mask_view="look-ahead")
    assert at.radio(key="lm_model").value == PRETRAINED_LM
    assert "pretrained by others" in said(at)
    assert "lm-stage-weights" in figures(at)


def test_a_korean_prompt_on_smollm2_gets_the_english_only_warning():
    at = open_app("generate", timeout=TIMEOUT, gen_prompt="이 영화는 정말")
    assert at.radio(key="gen_model").value == PRETRAINED_LM
    shown = " ".join(w.value for w in at.warning)
    assert "not in a language the model reads" in shown and "English only" in shown
