"""The pages say when a typed text is not in a language the chosen model reads, instead of a
confident answer (issue 39): the English and the Korean model, both directions, texts without words."""

from __future__ import annotations

import pytest

from ui.i18n import translate

from .app_helpers import open_app, texts

KOREAN_MODEL, ENGLISH_MODEL = "nsmc-sentiment", "imdb-sentiment"


def warnings(at) -> str:
    return "\n".join(texts(at.warning))


def test_the_korean_model_says_it_does_not_read_english():
    at = open_app("playground", text="the movie was not good", model=KOREAN_MODEL)
    assert not at.metric  # no confident headline
    shown = warnings(at)
    assert "not in a language the model reads" in shown and "Latin letters" in shown and "Korean only" in shown
    assert at.dataframe[0].value["prediction"].tolist() == ["not a language it reads"]
    assert at.expander[0].label == translate("language.numbers", "en")  # the numbers, folded away


def test_the_english_model_says_it_does_not_read_korean_in_korean():
    at = open_app("playground", text="이 영화 정말 좋았다", model=ENGLISH_MODEL, lang="ko")
    shown = warnings(at)
    assert "모델이 읽는 언어로 쓴 글이 아닙니다" in shown and "한글" in shown and "영어로만" in shown
    assert at.dataframe[0].value["prediction"].tolist() == ["모델이 읽지 않는 언어"]


@pytest.mark.parametrize("model, text", [(KOREAN_MODEL, "이 영화 정말 좋았다"), (ENGLISH_MODEL, "what a great film")])
def test_each_model_answers_its_own_language(model, text):
    at = open_app("playground", text=text, model=model)
    assert at.metric and "answer says nothing" not in warnings(at)


def test_mixed_text_is_judged_by_most_of_its_letters():
    at = open_app("playground", text="이 영화 진짜 최고 good\nthe acting was great 연기", model=KOREAN_MODEL)
    assert at.dataframe[0].value["prediction"].tolist()[1] == "not a language it reads"
    assert at.dataframe[0].value["prediction"].tolist()[0] in ("negative", "positive")


@pytest.mark.parametrize("model", [KOREAN_MODEL, ENGLISH_MODEL])
def test_numbers_and_emoji_have_no_words(model):
    at = open_app("playground", text="12345\n😀👍🎬", model=model)
    shown = warnings(at)
    assert "only numbers, no words" in shown and "only emoji or symbols, no words" in shown
    assert at.dataframe[0].value["prediction"].tolist() == ["no words to read"] * 2


def test_the_classifier_page_says_it_too():
    at = open_app("classifier", text="the movie was not good\n이 영화 정말 좋았다", model=KOREAN_MODEL)
    shown = warnings(at)
    assert "Lines whose answer says nothing about the text (not a language it reads): 1." in shown
    assert "not in a language the model reads" in shown  # the explained sentence, line 1
    assert not any(m.value.startswith("Prediction:") for m in at.markdown)
    labels = at.dataframe[0].value["label"].tolist()
    assert labels[0] == "not a language it reads" and labels[1] in ("negative", "positive")


def test_an_uploaded_korean_model_says_it_on_the_checkpoints_page():
    from transformer.bundle import load_bundle
    from ui.models import MODELS_DIR
    from ui.session import upload_key

    from .app_helpers import open_app

    key = upload_key("my-korean-model")
    at = open_app("checkpoints", uploads={key: load_bundle(MODELS_DIR / KOREAN_MODEL)}, chosen=key)
    at.text_input(key="ckpt_try").set_value("the movie was not good").run()
    assert "not in a language the model reads" in warnings(at) and not at.metric
    at.text_input(key="ckpt_try").set_value("이 영화 정말 좋았다").run()
    assert at.metric and "answer says nothing" not in warnings(at)


def test_the_translate_page_says_the_source_is_not_english():
    at = open_app("translate", tr_text="고양이가 책을 읽는다")
    assert "not in a language the model reads" in warnings(at) and "English only" in warnings(at)
    at.radio(key="tr_model").set_value("dates").run()
    at.text_input(key="tr_text").set_value("3/3/21").run()
    assert "answer says nothing" not in warnings(at)  # numbers are what the dates model reads


def test_the_similarity_page_names_the_sentences_the_english_encoder_cannot_read():
    at = open_app("similarity")
    at.text_area(key="sim_text").set_value("이 영화 정말 좋았다\nthe movie was great\n12345\nwhat a film").run()
    shown = warnings(at)
    assert "Sentences 1, 3 (not a language it reads, no words to read)" in shown
    at.text_area(key="sim_text").set_value("the movie was great\nwhat a film").run()
    assert "not a language it reads" not in warnings(at)


def test_the_generate_page_says_the_prompt_is_in_neither_of_its_languages():
    review = {"gen_model": "review-lm"}  # reads English and Korean (English starts on SmolLM2: English only)
    at = open_app("generate", state=review, gen_prompt="Этот фильм был")
    assert "Cyrillic" in warnings(at) and "English and Korean only" in warnings(at)
    for prompt in ("이 영화는 정말", "This movie was", "2024"):  # its two languages, and numbers
        at = open_app("generate", state=review, gen_prompt=prompt)
        assert "not in a language the model reads" not in warnings(at), prompt


def test_the_classifier_compare_boxes_say_it_for_a_sentence_in_another_language():
    at = open_app("classifier", text="영화가 정말 좋았다", model=KOREAN_MODEL)
    assert "not in a language the model reads" not in warnings(at)  # its own Korean defaults
    at.text_input(key="classifier_cmp_b").set_value("The movie was not good.").run()
    assert warnings(at).count("not in a language the model reads") == 1
    assert [m.label for m in at.metric][-2:] == ["First: p(positive)", "Second: p(positive)"]  # numbers stay
