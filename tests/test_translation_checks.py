"""Translation that says when it is out of its depth: the digit tokenizer, the rules that check
a date and a sentence, and their messages in the CLI's records and on the Translate page."""

from __future__ import annotations

import json

import pytest

from tests.app_helpers import ROOT, open_app, texts
from transformer import analyze, load_model
from transformer.cli.main import main
from transformer.core.tokenizer import basic_english, basic_english_digits
from transformer.translation import dates, get_task, word_order
from transformer.translation.checks import GRAMMAR, check, grammar_stop

DATES = ROOT / "assets" / "models" / "dates"
WORD_ORDER = ROOT / "assets" / "models" / "en-ko-order"
DATE_WORDS = set(dates.source_words())
ORDER_WORDS = set(get_task("word-order").source_words())


def date_check(text: str, output: str | None = None):
    tokens = basic_english_digits(text)
    return check("dates", tokens, [w not in DATE_WORDS for w in tokens], output)


def order_check(text: str):
    tokens = basic_english(text)
    return check("word-order", tokens, [w not in ORDER_WORDS for w in tokens])


def codes(verdict) -> list[str]:
    return [p.code for p in verdict.problems]


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("2021-03-03", ["2", "0", "2", "1", "-", "0", "3", "-", "0", "3"]),
        ("2021/3/3", ["2", "0", "2", "1", "/", "3", "/", "3"]),
        ("03.03.2021", ["0", "3", ".", "0", "3", ".", "2", "0", "2", "1"]),
        ("May 9th, '18", ["may", "9", "th", ",", "'", "1", "8"]),
        ("march 3 2021", ["march", "3", "␣", "2", "0", "2", "1"]),
    ],
)
def test_the_digit_tokenizer_sees_every_digit_and_separator(text, tokens):
    assert basic_english_digits(text) == tokens
    assert not set(tokens) - DATE_WORDS  # every piece is in the dates vocabulary


def test_generated_pairs_and_their_true_outputs_raise_no_problem():
    for pair in dates.generate(400, seed=3, split="test") + dates.examples():
        assert date_check(pair.text, "".join(pair.target)).reliable, pair.text
    for pair in word_order.generate(400, seed=3, split="test") + word_order.examples():
        assert grammar_stop(pair.source) is None and order_check(pair.text).reliable, pair.text


def test_date_problems_are_named():
    assert codes(date_check("February 30, 2021", "2021-02-30")) == ["impossible_input", "impossible_output"]
    assert codes(date_check("2021-13-45", "2021-13-45")) == ["impossible_input", "impossible_output"]
    hello = date_check("hello world", "2019-08-02")
    assert codes(hello) == ["not_a_date"] and hello.problems[0].words == ("hello", "world")
    assert "'hello', 'world'" in hello.messages()[0]
    assert codes(date_check("the 3rd of smarch 2020")) == ["not_a_date"]
    assert codes(date_check("1850-01-01", "1850-01-01")) == ["year_range"]
    disagree = date_check("2021/3/3", "2021-03-04")
    assert codes(disagree) == ["disagrees"] and "2021-03-03" in disagree.messages()[0]
    assert codes(date_check("3 may 2021 hooray", "2021-05-03")) == ["unknown_words"]
    assert date_check("12/31/99", "1999-12-31").reliable


def test_word_order_problems_name_the_words():
    zebra = order_check("the zebra reads a letter")
    assert codes(zebra) == ["unknown_words"] and zebra.problems[0].words == ("zebra",)
    assert "Outside what this model learned" in zebra.messages()[0] and "'zebra'" in zebra.messages()[0]
    yes = order_check("yes , the cat reads a letter")
    assert yes.problems[0].words == ("yes", ",")
    shuffled = order_check("cat the reads letter a")
    assert codes(shuffled) == ["outside_grammar"] and shuffled.problems[0].position == 1
    assert GRAMMAR in shuffled.messages()[0]
    extra = order_check("the cat reads a letter the")
    assert extra.problems[0].position == 6 and extra.problems[0].expected == "end"
    assert codes(order_check("the cat reads")) == ["incomplete"]
    assert codes(order_check("the cat reads a letter in park")) == ["outside_grammar"]
    assert order_check("today the dog finds the teacher in the park").reliable


def cli_records(capsys, model, *texts_: str) -> list[dict]:
    code = main(["inspect", "--checkpoint", str(model), "--text", *texts_, "--attention", "none", "--format", "jsonl"])
    assert code == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_cli_records_say_when_a_date_cannot_be_trusted(capsys):
    good, february, hello = cli_records(capsys, DATES, "2021-03-03", "February 30, 2021", "hello world")
    assert good["translation"] == {"text": "2021-03-03", "reliable": True, "problems": []}
    assert "warnings" not in good
    assert not february["translation"]["reliable"]
    assert "impossible_input" in [p["code"] for p in february["translation"]["problems"]]
    assert any("not a real calendar date" in w for w in february["warnings"])
    assert hello["translation"]["problems"][0]["code"] == "not_a_date"  # (and its output is no date either)


def test_cli_records_say_when_a_sentence_is_outside_the_grammar(capsys):
    good, zebra, shuffled = cli_records(
        capsys, WORD_ORDER, "the cat reads a letter", "the zebra reads a letter", "cat the reads letter a"
    )
    assert good["translation"]["reliable"] and good["translation"]["text"] == "고양이 는 편지 를 읽는다"
    assert zebra["translation"]["problems"][0]["words"] == ["zebra"] and not zebra["translation"]["reliable"]
    assert shuffled["translation"]["problems"][0]["code"] == "outside_grammar"
    assert any("Outside what this model learned" in w for w in shuffled["warnings"])


@pytest.mark.parametrize(
    ("text", "iso"),
    [("2021-03-03", "2021-03-03"), ("2021/3/3", "2021-03-03"), ("03.03.2021", "2021-03-03"),
     ("3/3/21", "2021-03-03"), ("may 9 , 1901", "1901-05-09"), ("the 1st of june , 2099", "2099-06-01")],
)  # fmt: skip
def test_the_retrained_dates_model_reads_the_formats_of_the_issue(text, iso):
    loaded = load_model(DATES)
    assert "".join(analyze(loaded, [text]).decoder_tokens[0][1:-1]) == iso


def test_a_noun_in_a_new_role_gets_the_right_particle():
    loaded = load_model(WORD_ORDER)
    # "dog" and "teacher" were subjects only in the first lexicon; "letter" an object only
    out = analyze(loaded, ["the letter sees a dog", "a book finds the teacher"]).decoder_tokens
    assert out[0][1:-1] == ["편지", "는", "개", "를", "본다"]
    assert out[1][1:-1] == ["책", "이", "선생님", "을", "찾는다"]


def warnings_of(at) -> str:
    return "\n".join(texts(at.warning))


def test_translate_page_marks_an_impossible_date_and_a_non_date():
    at = open_app("translate", tr_model="dates", tr_text="February 30, 2021")
    assert "Unreliable" in warnings_of(at) and "not a real calendar date" in warnings_of(at)
    at.text_input(key="tr_text").set_value("hello world").run()
    assert "does not look like a date" in warnings_of(at) and "hello" in warnings_of(at)
    at.text_input(key="tr_text").set_value("03.03.2021").run()
    assert "### 2021\\-03\\-03" in texts(at.markdown) and not at.warning


def test_translate_page_marks_unknown_words_and_sentences_outside_the_grammar():
    at = open_app("translate", tr_text="the zebra reads a letter")
    assert "Outside what this model learned" in warnings_of(at) and "zebra" in warnings_of(at)
    at.text_input(key="tr_text").set_value("the cat reads a letter the").run()
    assert "word 6" in warnings_of(at) and "the end of the sentence" in warnings_of(at)


def test_translate_page_messages_in_korean():
    at = open_app("translate", lang="ko", tr_text="cat the reads letter a")
    assert "이 모델이 배운 범위 밖입니다" in warnings_of(at)
