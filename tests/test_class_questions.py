"""Questions asked of the model: the answer is what the numbers say, the texts come in both languages
with typed text escaped, the CSV has every option (the reveal itself: tests/test_class_reveal_html.py)."""

from __future__ import annotations

import numpy as np
import pytest

from ui.classroom.questions import (
    attend_question,
    correct_question,
    export_rows,
    focused_query,
    head_role_question,
    label_question,
    next_token_question,
    next_word_question,
    option_text,
    question_text,
)
from ui.classroom.store import Question, Tally


def weights_with(row_of: dict, shape=(2, 3, 4, 4)) -> np.ndarray:
    w = np.full(shape, 0.25)
    for (layer, head, query), row in row_of.items():
        w[layer, head, query] = row
    return w


def test_an_attention_question_is_answered_by_the_rows_largest_weight():
    tokens = ["the", "movie", "was", "great"]
    w = weights_with({(1, 2, 3): [0.1, 0.6, 0.2, 0.1]})
    draft = attend_question(tokens, tokens, w, layer=1, head=2, query=3, model="m", text="the movie was great")
    assert draft.answer == 1 and draft.options == 4
    assert draft.reveal["values"] == [0.1, 0.6, 0.2, 0.1]
    assert draft.payload["layer"] == 2 and draft.payload["head"] == 3 and draft.payload["query_token"] == "great"
    assert "values" not in draft.payload  # nothing of the answer in what students see before the reveal
    with pytest.raises(ValueError):
        attend_question(tokens, tokens[:3], w, 0, 0, 0, "m", "x")


def test_the_default_query_is_the_most_peaked_row_not_the_first():
    w = weights_with({(0, 0, 0): [1.0, 0, 0, 0], (0, 0, 2): [0.05, 0.05, 0.85, 0.05]})
    assert focused_query(w, 0, 0) == 2


def test_a_next_token_question_offers_the_four_likeliest_with_the_likeliest_as_answer():
    probs = np.array([0.05, 0.4, 0.1, 0.2, 0.15, 0.1])
    draft = next_token_question(probs, lambda i: f"tok{i}", "lm", "the plot")
    shown = draft.payload["options"]
    assert sorted(shown) == ["tok1", "tok2", "tok3", "tok4"] or sorted(shown) == ["tok1", "tok3", "tok4", "tok5"]
    assert shown[draft.answer] == "tok1"
    assert draft.reveal["values"][draft.answer] == 0.4
    same = next_token_question(probs, lambda i: "x", "lm", "the plot")  # ids shown alike are told apart
    assert len(set(same.payload["options"])) == 4


def test_a_translation_question_names_what_is_written_so_far_and_answers_with_the_decoders_choice():
    probs = np.array([0.1, 0.05, 0.5, 0.2, 0.15])
    draft = next_word_question(
        probs, lambda i: ["가", "나", "영화", "*배우*", "좋다"][i], "ko-en", "the movie", "그 **"
    )
    assert draft.kind == "next_word" and draft.options == 4
    assert draft.payload["options"][draft.answer] == "영화" and draft.reveal["values"][draft.answer] == 0.5
    assert draft.payload["text"] == "the movie" and draft.payload["written"] == "그 **"
    english, korean = question_text(draft.payload, "en"), question_text(draft.payload, "ko")
    assert "«그 \\*\\*»" in english and "translator write next" in english  # what was typed stays plain text
    assert "지금까지의 번역" in korean and "다음에 쓸 단어" in korean
    assert question_text(draft.payload, "en", plain=True).startswith("The translation so far: «그 **»")


def test_label_and_right_or_wrong_questions_follow_the_prediction():
    labels, probs = ["negative", "positive"], np.array([0.3, 0.7])
    assert label_question(labels, probs, "m", "good").answer == 1
    right = correct_question(labels, probs, truth=1, model="m", text="good")
    wrong = correct_question(labels, probs, truth=0, model="m", text="good")
    assert right.payload["options"][right.answer] == "yes" and wrong.payload["options"][wrong.answer] == "no"
    assert wrong.reveal["predicted"] == "positive"


def test_a_head_question_is_answered_by_the_highest_score():
    scores = np.array([[0.1, 0.9, 0.2], [0.3, 0.4, 0.5]])
    draft = head_role_question(scores, "previous", "lm", "a b c")
    assert draft.options == 6 and draft.answer == 1 and draft.payload["options"][1] == "1.2"
    assert option_text(draft.payload, 5, "en") == "L2 H3"


def test_question_texts_in_both_languages_escape_what_was_typed():
    tokens = ["**bold**", "<b>x</b>"]
    draft = attend_question(tokens, tokens, np.full((1, 1, 2, 2), 0.5), 0, 0, 1, "m", "**bold** <b>x</b>")
    english, korean = question_text(draft.payload, "en"), question_text(draft.payload, "ko")
    assert "\\<b\\>x\\<\\/b\\>" in english and "<b>" not in english.replace("\\<b\\>", "")
    assert "레이어 1" in korean and "헤드 1" in korean and "\\<b\\>" in korean
    truth = correct_question(["negative", "positive"], np.array([0.9, 0.1]), 1, "m", "x").payload
    assert "positive" in question_text(truth, "en") and "긍정" in question_text(truth, "ko")
    assert option_text(truth, 0, "ko") == "예" and option_text(truth, 1, "en") == "No"
    plain = question_text(draft.payload, "en", plain=True)  # a table, a CSV file: as typed, no bold marks
    assert plain == "In layer 1, head 1: which token does <b>x</b> (token 1) attend to most?"
    starred = attend_question(tokens, tokens, np.full((1, 1, 2, 2), 0.5), 0, 0, 0, "m", "").payload
    assert "does **bold** (token 0)" in question_text(starred, "en", plain=True)
    assert "인덕션" in question_text(head_role_question(np.zeros((1, 2)), "induction", "m", "").payload, "ko")


def test_the_csv_rows_hold_every_option_with_counts_and_given_nicknames():
    draft = label_question(["negative", "positive"], np.array([0.2, 0.8]), "m", "=cmd() good")
    question = Question(1, draft.kind, draft.payload, draft.options, True, draft.answer, draft.reveal)
    rows = export_rows([question], {1: Tally(3, [1, 2], [[], ["Ann", "Bo"]])}, "en")
    assert [(r["option"], r["count"], r["model_answer"], r["nicknames"]) for r in rows] == [
        ("negative", 1, False, ""),
        ("positive", 2, True, "Ann; Bo"),
    ]
    assert rows[1]["model_value"] == 0.8 and rows[0]["asked"] == "What will the classifier say about this sentence?"


def test_the_csv_keeps_the_models_answer_out_until_the_reveal():
    draft = label_question(["negative", "positive"], np.array([0.2, 0.8]), "m", "good")
    hidden = Question(1, draft.kind, draft.payload, draft.options, False, draft.answer, draft.reveal)  # the teacher's
    rows = export_rows([hidden], {1: Tally(2, [1, 1], [["Ann"], []])}, "en")
    assert [(r["model_answer"], r["model_value"], r["count"]) for r in rows] == [("", "", 1), ("", "", 1)]
    assert "0.8" not in repr(rows) and "True" not in repr(rows)


def test_the_next_token_model_is_the_pages_unless_a_language_names_another(monkeypatch):
    from ui.classroom import questions

    assert questions.next_token_model("smollm2", "ko") == "smollm2"
    monkeypatch.setitem(questions.NEXT_TOKEN_MODELS, "ko", "gemma-3")
    assert questions.next_token_model("smollm2", "ko") == "gemma-3"
    assert questions.next_token_model("smollm2", "en") == "smollm2"
