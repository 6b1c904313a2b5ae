"""The Class page in AppTest: a teacher asks each kind of question from its page, a student in the other
language joins with the code, answers, and both see the reveal; who may do what; a store that cannot be
opened says so."""

from __future__ import annotations

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from ui.classroom.questions import option_text
from ui.classroom.reveal_html import ROOT_CLASS, reveal_html
from ui.classroom.store import open_store
from ui.classroom.view import CODE_PARAM, ME_PARAM
from ui.session import CLASS_TEACHER
from ui.share import network_address

from .app_helpers import APP, figures, texts
from .test_class_reveal_html import Reveal


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_DATA", str(tmp_path))
    return tmp_path


def app(lang: str, **query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["lang"] = lang
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    at.switch_page("pages/class.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def teacher(lang: str) -> tuple[AppTest, str]:
    at = app(lang)
    at.button(key="class_start").click().run()
    code = at.session_state[CLASS_TEACHER.key]["code"]
    assert code in texts(at.get("html"))[-1] or any(code in h for h in texts(at.get("html")))
    return at, code


def student(lang: str, code: str, nickname: str = "") -> AppTest:
    at = app(lang, **{CODE_PARAM: code})
    at.text_input(key="class_join_name").input(nickname)
    at.button(key="class_join_go").click().run()
    assert not at.exception and at.query_params.get(ME_PARAM), texts(at.error)
    return at


def ask_from(at: AppTest, page: str, key: str, **choices) -> None:
    at.switch_page(f"pages/{page}.py")
    at.run()
    for widget, value in choices.items():  # in order: a choice may bring the next one
        getattr(at, "radio" if widget == "class_ask_kind" else "selectbox")(key=widget).set_value(value)
        at.run()
    at.button(key=f"class_ask_go_{key}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert texts(at.success), texts(at.error)
    at.switch_page("pages/class.py")
    at.run()


def answer_buttons(at: AppTest, code: str, number: int) -> list:
    return [b for b in at.get("button_group") if getattr(b, "key", "") == f"class_pick_{code}_{number}"]


def pills(at: AppTest, code: str, number: int):
    return answer_buttons(at, code, number)[0]


CASES = [  # page, popover key, choices in the popover, teacher's language, student's, words of the question
    ("attention", "attention", {}, "en", "ko", ("레이어 1", "헤드 1", "주의")),
    ("generate", "generate", {}, "ko", "en", ("language model write next",)),
    ("classifier", "classifier", {}, "en", "ko", ("분류기는 이 문장을",)),
    ("classifier", "classifier", {"class_ask_kind": "correct", "class_ask_truth": 0}, "ko", "en", ("really is",)),
    ("head_atlas", "head_atlas", {}, "en", "ko", ("바로 앞 토큰",)),
    ("translate", "translate", {}, "ko", "en", ("The translation so far", "translator write next")),
]


@pytest.mark.parametrize(("page", "key", "choices", "t_lang", "s_lang", "words"), CASES)
def test_each_kind_is_asked_answered_and_revealed_in_both_languages(data, page, key, choices, t_lang, s_lang, words):
    teach, code = teacher(t_lang)
    ask_from(teach, page, key, **choices)
    pupil = student(s_lang, code, nickname="**Ann** <i>")
    question = texts(pupil.markdown)[0]
    assert all(word in question for word in words), question
    assert "**Ann** &lt;i&gt;" in " ".join(texts(pupil.get("html")))  # the nickname as typed, HTML-escaped plain text
    choice = pills(pupil, code, 1)
    assert choice.options and not choice.disabled
    choice.set_value(1).run()
    assert open_store().my_answer(code, pupil.query_params[ME_PARAM], 1) == 1
    assert not figures(pupil) and not revealed(pupil)  # nothing of the answer before the reveal
    teach.run()
    assert [m.value for m in teach.metric] == ["1"]
    teach.button(key="class_reveal").click().run()
    assert not teach.exception
    question, counts = open_store().current(code), open_store().tally(code, 1).counts  # revealed: readable
    projected = reveal_html(question.payload, question.reveal, question.answer, counts, None, t_lang)
    assert revealed(teach) == [projected] and not figures(teach)  # the projector: the same HTML, no one's own mark
    pupil.run()
    assert not figures(pupil) and not answer_buttons(pupil, code, 1)  # no chart; the buttons make way for the reveal
    summary = texts(pupil.markdown)[1]
    assert ("The model" in summary) if s_lang == "en" else ("모델의 답" in summary)
    assert revealed(pupil) == [reveal_html(question.payload, question.reveal, question.answer, counts, 1, s_lang)]
    seen = Reveal(revealed(pupil)[0])  # the model's answer, the class's count and this student's own, marked
    assert "model" in seen.options[question.answer]["marks"] and "you" in seen.options[1]["marks"] and counts[1] == 1
    if question.kind != "head_role":  # a bar's row names its option; a head's cell is its place in the grid
        assert option_text(question.payload, question.answer, s_lang) in seen.option_text(question.answer)


def revealed(at: AppTest) -> list[str]:
    """The reveal's HTML on a screen, a student's or the projector (none before the reveal)."""
    return [h for h in texts(at.get("html")) if f'class="{ROOT_CLASS}"' in h]


def test_a_student_cannot_teach_and_the_secret_is_never_in_an_address(data):
    teach, code = teacher("en")
    secret = teach.session_state[CLASS_TEACHER.key]["secret"]
    assert all(secret not in v for v in teach.query_params.values())
    ask_from(teach, "classifier", "classifier")
    pupil = student("en", code)
    labels = [b.label for b in pupil.button]
    assert "Reveal the model's answer" not in labels and "End the class" not in labels
    assert not any(secret in c.value for c in pupil.code)
    forged = app("en", **{CODE_PARAM: code, ME_PARAM: "made-up-id"})
    assert "a student this class does not know" in " ".join(texts(forged.error))
    wrong = app("en", **{CODE_PARAM: "ZZZZZZ"})
    wrong.button(key="class_join_go").click().run()
    assert "no class with this code" in " ".join(texts(wrong.error))


def test_two_teachers_on_one_code_one_leads_the_other_follows_and_can_take_the_lead(data):
    first, code = teacher("en")
    secret = first.session_state[CLASS_TEACHER.key]["secret"]
    ask_from(first, "classifier", "classifier")
    pupil = student("en", code)
    pills(pupil, code, 1).set_value(1).run()
    second = app("ko")  # another browser: the Resume form with the code and the key takes the lead
    second.text_input(key="class_resume_code").input(code.lower())
    second.text_input(key="class_resume_key").input(secret)
    second.button(key="class_resume_go").click().run()
    assert not second.exception and [m.value for m in second.metric] == ["1"]  # the same class, the answer kept
    assert any(b.key == "class_reveal" for b in second.button)
    first.run()  # the first screen's next run: it follows, told why, and cannot change the class
    assert "Another teacher screen leads this class" in " ".join(texts(first.warning))
    assert not any(b.key == "class_reveal" for b in first.button)
    assert first.button(key="class_close").disabled and first.button(key="class_reopen").disabled
    ask_from_refused = first.switch_page("pages/classifier.py").run()
    ask_from_refused.button(key="class_ask_go_classifier").click().run()
    assert "taken the lead" in " ".join(texts(ask_from_refused.error))
    assert open_store().info(code).questions == 1  # nothing asked from the screen that does not lead
    first.switch_page("pages/class.py").run()
    first.button(key="class_take_lead").click().run()  # and back
    first.button(key="class_reveal").click().run()
    assert not first.exception and len(revealed(first)) == 1
    second.run()
    assert "다른 교사 화면이 이 수업을 이끌고" in " ".join(texts(second.warning))
    assert len(revealed(second)) == 1  # it follows the reveal
    assert open_store().my_answer(code, pupil.query_params[ME_PARAM], 1) == 1


def test_the_projector_keeps_the_models_answer_hidden_until_the_reveal(data, monkeypatch):
    downloads, original = {}, st.download_button

    def recording(label, data, *args, **kwargs):
        downloads[str(kwargs.get("file_name", "")).rsplit(".", 1)[-1]] = data
        return original(label, data, *args, **kwargs)

    monkeypatch.setattr(st, "download_button", recording)
    teach, code = teacher("en")
    ask_from(teach, "classifier", "classifier")
    secret = teach.session_state[CLASS_TEACHER.key]["secret"]
    question = open_store().questions(code, secret)[0]
    answer = question.payload["options"][question.answer]
    table = teach.dataframe[0].value
    assert list(table["Model's answer"]) == ["hidden until the reveal"]
    shown = " ".join(texts(teach.markdown) + texts(teach.caption) + texts(teach.get("text")) + texts(teach.metric))
    assert answer not in shown and answer not in table.to_csv()
    csv = downloads["csv"].decode("utf-8-sig").splitlines()  # the export before the reveal: no answer, no numbers
    assert csv[0].startswith("question,kind,") and all(",,," in row for row in csv[1:]), csv
    assert not revealed(teach) and not figures(teach)
    teach.button(key="class_reveal").click().run()
    assert list(teach.dataframe[0].value["Model's answer"]) == [answer]


def test_a_reload_comes_back_to_the_same_answer(data):
    teach, code = teacher("en")
    ask_from(teach, "classifier", "classifier")
    pupil = student("en", code)
    pills(pupil, code, 1).set_value(0).run()
    again = app("en", **{CODE_PARAM: code, ME_PARAM: pupil.query_params[ME_PARAM]})  # a new browser session
    assert pills(again, code, 1).value == 0


def test_a_store_that_cannot_be_opened_says_so(tmp_path, monkeypatch):
    blocker = tmp_path / "data"
    blocker.write_text("a file where the data folder should be")
    monkeypatch.setenv("ATTENTION_LAB_DATA", str(blocker))
    at = app("ko")
    assert "수업 저장소에 연결할 수 없습니다" in " ".join(texts(at.error))


def test_one_count_and_a_students_screen_shows_what_the_store_holds(data):
    teach, code = teacher("en")
    ask_from(teach, "classifier", "classifier")
    pupil, idle = student("en", code), student("ko", code)
    me = pupil.query_params[ME_PARAM]
    pills(pupil, code, 1).set_value(1).run()
    pills(pupil, code, 1).set_value(None).run()  # the chosen answer clicked again: still chosen, still stored
    assert pills(pupil, code, 1).value == 1 and open_store().my_answer(code, me, 1) == 1
    assert "Your answer is saved" in " ".join(texts(pupil.caption))
    teach.run()
    assert [m.value for m in teach.metric] == ["1"] and list(teach.dataframe[0].value["Answered"]) == [1]
    teach.button(key="class_reveal").click().run()
    question = open_store().questions(code, teach.session_state[CLASS_TEACHER.key]["secret"])[0]
    mine = question.payload["options"][1]
    pupil.run()
    assert f"You chose **{mine}**" in texts(pupil.markdown)[1]  # the student's own answer, named
    own = Reveal(revealed(pupil)[0])  # and marked in the reveal, beside the class's count
    assert own.options[1]["marks"][-1] == "you" and "▼ you" in own.option_text(1) and " 1 " in own.option_text(1)
    idle.run()
    assert "이 질문에 답하지 않았습니다" in texts(idle.markdown)[1]
    assert not any("you" in o["marks"] for o in Reveal(revealed(idle)[0]).options.values())


def test_an_overlong_nickname_is_refused_with_the_limit_and_a_hostile_one_stays_plain_text(data):
    _, code = teacher("en")
    at = app("en", **{CODE_PARAM: code})
    assert "at most 40 characters" in at.text_input(key="class_join_name").label
    at.text_input(key="class_join_name").input("x" * 41)
    at.button(key="class_join_go").click().run()
    assert "41 characters; the limit is 40" in " ".join(texts(at.error)) and not at.query_params.get(ME_PARAM)
    assert at.text_input(key="class_join_name").value == "x" * 41  # kept, to shorten
    hostile = "![x](http://127.0.0.1:9/x.png)<script>"
    pupil = student("en", code, nickname=hostile)
    shown = next(h for h in texts(pupil.get("html")) if "class-plain" in h)
    assert "![x](http://127.0.0.1:9/x.png)&lt;script&gt;" in shown and "<" not in shown.split(">", 1)[1][:-4], shown


def test_a_pasted_join_link_joins_and_no_code_box_cuts_a_paste(data):
    _, code = teacher("en")
    at = app("en")
    assert not at.text_input(key="class_join_code").max_chars  # a browser's max_chars drops a paste in silence
    at.text_input(key="class_join_code").input(f"http://10.0.0.5:8080/class?lang=en&code={code.lower()}")
    at.button(key="class_join_go").click().run()
    assert not at.error and at.query_params.get(CODE_PARAM) == code and at.query_params.get(ME_PARAM)
    late = app("en")
    late.text_input(key="class_join_code").input(code + "X" * 40)  # more than a code: refused in words
    late.button(key="class_join_go").click().run()
    assert "no class with this code" in " ".join(texts(late.error))


def test_a_join_address_no_other_machine_can_open_says_so(data, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_LISTEN", "127.0.0.1")  # nginx on loopback only
    teach, _ = teacher("en")
    assert "Only this computer can open this address" in " ".join(texts(teach.warning))
    monkeypatch.setenv("ATTENTION_LAB_LISTEN", "0.0.0.0")  # nginx on every interface, the replicas on loopback
    teach.run()
    lan = network_address()
    url = teach.code[0].value
    if lan is None:  # a machine with no network: nothing can be reached, and the projector says so
        assert "Only this computer can open this address" in " ".join(texts(teach.warning))
    else:
        assert url.startswith(f"http://{lan}") and "Only this computer" not in " ".join(texts(teach.warning))
