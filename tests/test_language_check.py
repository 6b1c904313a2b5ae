"""Every text model says when most of a text is in a script it was not trained on
(transformer.language_check), in both directions, and in the CLI record."""

import json

import pytest

from transformer.analysis.language_check import (
    card_languages,
    check_text,
    count_scripts,
    folder_languages,
    metrics_languages,
)
from transformer.cli.main import main
from ui.models import MODELS_DIR

ENGLISH, KOREAN = ("en",), ("ko",)


@pytest.mark.parametrize(
    "name, languages",
    [
        ("imdb-sentiment", ENGLISH),
        ("imdb-sst2-sentiment", ENGLISH),
        ("nsmc-sentiment", KOREAN),
        ("review-lm", ("en", "ko")),
        ("en-ko-order", ENGLISH),
    ],
)
def test_bundled_models_say_their_languages(name, languages):
    assert folder_languages(MODELS_DIR / name) == languages


def test_a_hugging_face_folder_says_its_language_or_is_unknown(tmp_path):
    silent = tmp_path / "some-bert"
    silent.mkdir()
    (silent / "config.json").write_text('{"model_type": "bert"}', encoding="utf-8")
    assert folder_languages(silent) == ()
    assert check_text("이 영화 정말 좋았다", ()).ok and check_text("이 영화", ()).code == "unknown"
    (silent / "README.md").write_text("---\nlicense: mit\nlanguage:\n- ko\n- en\n---\n# card", encoding="utf-8")
    assert folder_languages(silent) == ("ko", "en")
    assert card_languages("---\nlanguage: en\n---\n") == ("en",)
    minilm = tmp_path / "all-MiniLM-L6-v2"  # published without a model card: known to be English
    minilm.mkdir()
    assert folder_languages(minilm) == ENGLISH


def test_metrics_name_the_training_corpora():
    assert metrics_languages({"data": {"dataset": "IMDB Large Movie Review Dataset"}}) == ENGLISH
    assert metrics_languages({"data": {"dataset": "NSMC-style Korean movie reviews"}}) == KOREAN
    assert metrics_languages({"languages": ["ko"], "data": {"dataset": "IMDB"}}) == KOREAN
    assert metrics_languages({"data": "generated English sentences -> Korean word order"}) == ENGLISH
    assert metrics_languages(None) == () and metrics_languages({"data": {}}) == ()


@pytest.mark.parametrize(
    "text, english_ok, korean_ok",
    [
        ("the movie was not good", True, False),
        ("이 영화 정말 좋았다", False, True),
        ("이 영화 진짜 최고 good", False, True),  # mostly Hangul
        ("the acting was great 연기", True, False),  # mostly Latin
    ],
)
def test_both_models_both_directions(text, english_ok, korean_ok):
    english, korean = check_text(text, ENGLISH), check_text(text, KOREAN)
    assert (english.ok, korean.ok) == (english_ok, korean_ok)
    wrong = english if not english_ok else korean
    assert wrong.code == "other_script" and "trained on" in wrong.reason
    assert ("Korean" if wrong is korean else "English") in wrong.reason


def test_texts_without_words_are_not_a_wrong_language():
    for languages in (ENGLISH, KOREAN, ()):
        assert check_text("😀👍🎬", languages).code == "emoji_only"
        assert check_text("12345 678", languages).code == "numbers_only"
        assert check_text("?!...", languages).code == "no_letters"
        assert not check_text("12345", languages).ok
    assert "only numbers" in check_text("2024", KOREAN).reason
    assert "only emoji" in check_text("🎬🍿", ENGLISH).reason


def test_other_scripts_are_named():
    counted = count_scripts("Это фильм 2024 😀")
    assert counted.main() == "cyrillic" and counted.digits == 4 and counted.symbols == 1
    assert "Cyrillic" in check_text("Это фильм", ENGLISH).reason


def inspect(capsys, model: str, *texts: str) -> list[dict]:
    args = ["inspect", "--checkpoint", str(MODELS_DIR / model), "--attention", "none", "--format", "jsonl"]
    assert main([*args, "--text", *texts]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_cli_records_say_when_the_language_is_not_the_models(capsys):
    korean = inspect(capsys, "nsmc-sentiment", "the movie was not good", "이 영화 정말 좋았다", "12345")
    assert [r["language"]["ok"] for r in korean] == [False, True, False]
    assert korean[0]["language"]["code"] == "other_script" and korean[0]["language"]["script"] == "latin"
    assert korean[0]["prediction"]["label"] in ("negative", "positive")  # existing fields stay
    assert korean[2]["language"]["code"] == "numbers_only"
    english = inspect(capsys, "imdb-sentiment", "이 영화 정말 좋았다", "the movie was great", "😀😀")
    assert [r["language"]["code"] for r in english] == ["other_script", "ok", "emoji_only"]
    assert english[0]["language"]["model_languages"] == ["en"]


def test_a_dates_model_reads_numbers_and_the_word_order_model_reads_english(capsys):
    dates = inspect(capsys, "dates", "3/3/21", "2021년 3월 3일")
    assert dates[0]["language"] == {**dates[0]["language"], "ok": True, "code": "numbers"}
    assert dates[1]["language"]["code"] == "other_script"
    assert check_text("12345", ENGLISH).code == "numbers_only"  # a model that does not read numbers
    order = inspect(capsys, "en-ko-order", "the cat reads a book", "고양이가 책을 읽는다")
    assert [r["language"]["ok"] for r in order] == [True, False]
