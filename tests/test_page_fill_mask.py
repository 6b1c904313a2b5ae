"""The Fill-in-the-blank page on an imported tiny masked language model (random BERT / RoBERTa built
here), put in the session's upload registry as a Checkpoints import would: its probabilities equal
``transformers``' AutoModelForMaskedLM softmax at the mask, in English and Korean, and bad input
gets one message."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.app_helpers import array, figures, open_app, texts
from tests.hf_models import make_folder
from transformer.hf import load_hf_folder
from ui.fill_mask import BUNDLED, DECODER, load_decoder
from ui.models import MODELS_DIR
from ui.session import upload_key

transformers = pytest.importorskip("transformers")

TOLERANCE = 1e-5
KEY = upload_key("tiny-bert-mlm")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """{arch: (our imported model, transformers' AutoModelForMaskedLM, its tokenizer)}."""
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("fill_mask")
    out = {}
    for arch in ("bert-mlm", "roberta-mlm", "bert-cls"):
        folder, _, tokenizer = make_folder(arch, root / arch)
        reference = transformers.AutoModelForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
        out[arch] = (load_hf_folder(folder), reference, tokenizer)
    return out


def open_page(uploads: dict, chosen: str | None = None, timeout: float = 120, **query: str) -> AppTest:
    """The app on the fill_mask page with ``uploads`` in this session's registry."""
    return open_app("fill_mask", uploads=uploads, chosen=chosen, timeout=timeout, **query)


def type_text(at: AppTest, text: str) -> AppTest:
    at.text_area(key="fm_text").set_value(text).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def reference_top(reference, tokenizer, text: str, k: int) -> list[tuple[list[str], np.ndarray]]:
    """Per mask of ``text``: transformers' top-k tokens and softmax probabilities."""
    ids = torch.tensor([tokenizer(text)["input_ids"]])
    with torch.no_grad():
        logits = reference(ids).logits[0]
    out = []
    for position in (ids[0] == tokenizer.mask_token_id).nonzero().flatten().tolist():
        probs = torch.softmax(logits[position], -1)
        top = probs.topk(k)
        out.append((tokenizer.convert_ids_to_tokens(top.indices.tolist()), top.values.numpy()))
    return out


def shown_guesses(at: AppTest, blank: int) -> tuple[list[str], np.ndarray]:
    bars = figures(at)[f"fill-mask-guesses-{blank}"]["data"][0]
    return [label.split(". ", 1)[1] for label in bars["y"]], array(bars["x"])


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_predictions_equal_transformers_softmax_at_the_mask(models, lang):
    loaded, reference, tokenizer = models["bert-mlm"]
    at = open_page({KEY: loaded}, lang=lang)
    text = "the movie was [MASK], really [MASK]!" if lang == "en" else "영화 정말 [MASK] 있다"
    type_text(at, text)
    expected = reference_top(reference, tokenizer, text, 5)
    assert len(expected) == (2 if lang == "en" else 1)
    for blank, (tokens, probs) in enumerate(expected, start=1):
        shown_tokens, shown_probs = shown_guesses(at, blank)
        assert shown_tokens == tokens
        assert np.abs(shown_probs - probs).max() < TOLERANCE
    heads = figures(at)["fill-mask-heads"]["data"][0]
    assert array(heads["z"]).shape == (4, len(tokenizer(text)["input_ids"]))  # heads × tokens of one layer
    assert np.allclose(array(heads["z"]).sum(-1), 1.0, atol=1e-5)
    if lang == "ko":
        assert at.title[0].value.startswith("빈칸 채우기")
        assert at.text_area(key="fm_text").label.startswith("빈칸 자리에 [MASK]")
        assert any("모델이 읽는 토큰" in m for m in texts(at.markdown))
        assert figures(at)["fill-mask-guesses-1"]["layout"]["title"]["text"] == "빈칸 1: 상위 후보 5개"


def test_roberta_reads_mask_typed_either_way_and_layers_can_be_chosen(models):
    loaded, reference, tokenizer = models["roberta-mlm"]
    at = open_page({KEY: loaded})
    type_text(at, "the movie was [MASK].")  # BERT's spelling: read as RoBERTa's <mask>
    assert at.text_area(key="fm_text").value == "the movie was <mask>."
    tokens, probs = reference_top(reference, tokenizer, "the movie was <mask>.", 3)[0]
    at.slider(key="fm_top_k").set_value(3).run()
    shown_probs = shown_guesses(at, 1)[1]
    assert len(shown_probs) == 3 and np.abs(shown_probs - probs).max() < TOLERANCE
    with torch.no_grad():
        ids = torch.tensor([tokenizer("the movie was <mask>.")["input_ids"]])
        attentions = reference(ids, output_attentions=True).attentions
    position = ids[0].tolist().index(tokenizer.mask_token_id)
    at.selectbox(key="fm_layer").set_value(1).run()
    z = array(figures(at)["fill-mask-heads"]["data"][0]["z"])
    assert np.abs(z - attentions[0][0, :, position].numpy()).max() < TOLERANCE


def test_clicking_a_word_makes_it_a_blank(models):
    loaded, _, _ = models["bert-mlm"]
    at = type_text(open_page({KEY: loaded}), "the movie was great.")
    assert any("no blank" in m for m in texts(at.info))
    at.pills(key="fm_pick").set_value(3).run()
    assert at.text_area(key="fm_text").value == "the movie was [MASK]."
    assert "fill-mask-guesses-1" in figures(at)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no blank here", "write [MASK] where a word is missing"),
        (" ".join(["[MASK]"] * 6), "6 blanks; at most 5"),
        ("the movie " * 40 + "[MASK]", "tokens long but this model reads at most 64"),
        ("a" * 2001 + " [MASK]", "2,008 characters; at most 2,000"),
    ],
    ids=["no-blank", "six-blanks", "too-many-tokens", "too-many-characters"],
)
def test_bad_input_gets_one_message(models, text, message):
    loaded, _, _ = models["bert-mlm"]
    at = type_text(open_page({KEY: loaded}), text)
    shown = texts(at.info) + texts(at.warning)
    assert [m for m in shown if message in m], shown
    assert "fill-mask-guesses-1" not in figures(at)


def test_out_of_the_box_korean_fills_blanks_with_the_masked_model_trained_here():
    """No import needed: in Korean the masked language model trained here opens (SmolLM2 reads English only:
    offered last), says it was trained here, and fills the example's blank."""
    if not (MODELS_DIR / BUNDLED["ko"] / "config.json").is_file():
        pytest.skip(f"{BUNDLED['ko']} is not bundled in this checkout")
    at = open_page({}, lang="ko")
    assert at.selectbox(key="fm_model").value == BUNDLED["ko"]
    assert at.selectbox(key="fm_model").options[-1] == f"{DECODER} (디코더, 영어)"
    assert not [m for m in texts(at.info) if "마스크 언어 모델이 없습니다" in m]
    assert any("여기서 학습한" in c for c in texts(at.caption))
    assert any(DECODER in c and "디코더" in c for c in texts(at.caption))  # where to see the other way
    assert "fill-mask-guesses-1" in figures(at)


@pytest.mark.skipif(not any((MODELS_DIR / DECODER).glob("*.gguf")), reason="SmolLM2 is not bundled here")
def test_english_opens_on_the_decoder_whose_scores_are_whole_sentence_log_probabilities():
    torch.set_num_threads(1)
    at = open_page({}, timeout=400)
    assert at.selectbox(key="fm_model").value == DECODER
    assert BUNDLED["en"] in at.selectbox(key="fm_model").options  # the masked models stay
    assert any("reads left to right" in m and "both sides at once" in m for m in texts(at.info))
    bars = figures(at)["fill-decoder-sentences"]["data"][0]
    words = [label.split(". ", 1)[1] for label in bars["y"]]
    scores = array(bars["customdata"])[:, 0]
    assert len(words) == 5 and list(scores) == sorted(scores, reverse=True)
    sentence = f"I loved every minute of it: the movie was {words[0]}."
    assert any(f"the movie was {words[0]}" in m and "best-scored" in m for m in texts(at.markdown))
    loaded = load_decoder()
    ids = [0, *loaded.lm_tokenizer.encode(sentence).ids]
    with torch.no_grad():
        logp = torch.log_softmax(loaded.model(torch.tensor([ids])).logits[0].double(), -1)
    whole = float(logp[:-1].gather(1, torch.tensor(ids[1:])[:, None]).sum())
    assert abs(scores[0] - whole) < 1e-3  # the bar's number is the whole sentence's log-probability
    table = at.dataframe[0].value
    assert list(table["word"]) == words
    parts = table["before the blank"] + table["the word"] + table["after the blank"]
    assert np.allclose(parts, table["log p(sentence)"], atol=0.02)  # the score in its parts (rounded to 0.01)
    assert np.allclose(array(bars["x"]).sum(), 1.0)
    at.selectbox(key="fm_model").set_value(BUNDLED["en"]).run()  # an untouched example follows the model
    assert at.text_area(key="fm_text").value == "The movie was <mask>, I loved it."  # its own spelling
    assert "fill-mask-guesses-1" in figures(at) and any(DECODER in c for c in texts(at.caption))
    type_text(at, "The [MASK] was [MASK].")
    at.selectbox(key="fm_model").set_value(DECODER).run()
    assert at.text_area(key="fm_text").value == "The [MASK] was [MASK]."  # a typed sentence stays
    assert any("one blank at a time" in m for m in texts(at.warning))


def test_a_classifier_chosen_in_the_sidebar_is_named_as_having_no_masked_lm_head(models):
    classifier = upload_key("tiny-bert-cls")
    at = open_page({classifier: models["bert-cls"][0]}, chosen=classifier)
    assert any("has no masked-LM head" in m for m in texts(at.warning))
