"""The reveal as HTML (a student's screen and the projector): the model's numbers beside the class's counts,
the marks, every option text escaped, in both languages; the heads as a framed grid."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import numpy as np
import pytest

from ui.classroom.questions import attend_question, correct_question, head_role_question, label_question, option_text
from ui.classroom.reveal_html import BAR_ROOM, marks, reveal_html

SAFE_TAGS = {"style", "div", "span", "table", "colgroup", "col", "tr", "th", "td", "br", "b"}


class Reveal(HTMLParser):
    """The parts of a reveal a reader sees: every tag used, the text of each option (``data-option``) row
    or cell with its marks, and the whole text."""

    def __init__(self, markup: str) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.options: dict[int, dict] = {}
        self.text: list[str] = []
        self._open: list[tuple[str, dict | None]] = []
        self.feed(markup)

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        attrs = dict(attrs)
        option = None
        if "data-option" in attrs:
            option = {"marks": attrs["data-marks"].split(), "text": [], "style": attrs.get("style", ""), "inner": []}
            self.options[int(attrs["data-option"])] = option
        elif self._open and self._open[-1][1] is not None:
            option = self._open[-1][1]
            option["inner"].append(attrs.get("style", ""))
        if tag not in ("br", "col"):
            self._open.append((tag, option))

    def handle_endtag(self, tag):
        if tag not in ("br", "col"):
            self._open.pop()

    def handle_data(self, data):
        if self._open and self._open[-1][0] == "style":
            return
        self.text.append(data)
        if self._open and self._open[-1][1] is not None:
            self._open[-1][1]["text"].append(data)

    def option_text(self, i: int) -> str:
        return " ".join(self.options[i]["text"])


TOKENS = ["the", "<script>alert(1)</script>", '"><img src=x onerror=alert(2)>', "great"]


def attend(tokens=TOKENS):
    w = np.full((1, 1, 4, 4), 0.25)
    w[0, 0, 3] = [0.1, 0.6, 0.2, 0.1]
    return attend_question(tokens, tokens, w, 0, 0, 3, "m", " ".join(tokens))


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_each_option_has_the_models_number_the_class_count_and_its_marks(lang):
    draft = attend()
    markup = reveal_html(draft.payload, draft.reveal, draft.answer, [1, 2, 5, 0], mine=3, lang=lang)
    seen = Reveal(markup)
    assert seen.tags <= SAFE_TAGS, seen.tags  # no tag from an option: no script, no image
    assert [seen.options[i]["marks"] for i in range(4)] == [[], ["model"], ["class"], ["you"]]
    words = {"en": ("▼ model", "▼ class", "▼ you"), "ko": ("▼ 모델", "▼ 반", "▼ 나")}[lang]
    for i, word in zip((1, 2, 3), words):
        assert word in seen.option_text(i)
    for i, (weight, count) in enumerate(zip([0.1, 0.6, 0.2, 0.1], [1, 2, 5, 0])):
        row = seen.option_text(i)
        assert option_text(draft.payload, i, lang) in row  # the token as typed, read back from escaped HTML
        assert f"{weight:.3f}" in row and re.search(rf"\b{count}\b", row)
    title = {"en": "The model's answer beside the class's", "ko": "모델의 답과 반 학생들의 답"}[lang]
    legend = {"en": "the model's attention weight", "ko": "모델의 어텐션 가중치"}[lang]
    assert title in seen.text and legend in seen.text
    assert "<script>" not in markup and "<img" not in markup and "&lt;script&gt;alert(1)" in markup


def test_bars_are_percent_widths_of_the_longest_number_and_the_models_answer_is_framed():
    draft = attend(["a", "b", "c", "d"])
    seen = Reveal(reveal_html(draft.payload, draft.reveal, draft.answer, [1, 2, 5, 0], None, "en"))
    widths = {i: [float(w) for w in re.findall(r"width:([\d.]+)%", " ".join(row["inner"]))]
              for i, row in seen.options.items()}  # fmt: skip
    top = 5 / 8  # the class's share of option 2 is the longest bar
    for i, (weight, count) in enumerate(zip([0.1, 0.6, 0.2, 0.1], [1, 2, 5, 0])):
        assert widths[i] == pytest.approx([BAR_ROOM * weight / top, BAR_ROOM * count / 8 / top], abs=0.06)
    framed = [i for i, o in seen.options.items() if any("outline:3px" in s for s in o["inner"])]
    assert framed == [1]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_yes_no_has_no_model_bar_and_the_title_says_what_the_model_predicted(lang):
    draft = correct_question(["negative", "positive"], np.array([0.8, 0.2]), 1, "m", "fine")
    seen = Reveal(reveal_html(draft.payload, draft.reveal, draft.answer, [4, 1], 0, lang))
    title = seen.text[0]
    assert ("negative" in title and "positive" in title) if lang == "en" else ("부정" in title and "긍정" in title)
    assert draft.answer == 1 and seen.options[1]["marks"] == ["model"] and seen.options[0]["marks"] == ["class", "you"]
    assert not any("." in t for i in (0, 1) for t in seen.options[i]["text"])  # counts only, no model number
    assert option_text(draft.payload, 0, lang) in seen.option_text(0)


def test_a_number_that_is_not_a_number_draws_no_bar():
    draft = label_question(["negative", "positive"], np.array([0.2, 0.8]), "m", "x")
    markup = reveal_html(draft.payload, {"values": [float("nan"), 0.8]}, 1, [1, 1], None, "en")
    assert "nan" not in markup.lower() and "width:0.0%" in markup


def test_every_tied_favourite_is_marked_and_none_before_anyone_answered():
    draft = label_question(["negative", "positive"], np.array([0.2, 0.8]), "m", "x")
    tied = Reveal(reveal_html(draft.payload, draft.reveal, draft.answer, [3, 3], None, "en"))
    assert [tied.options[i]["marks"] for i in (0, 1)] == [["class"], ["model", "class"]]
    nobody = Reveal(reveal_html(draft.payload, draft.reveal, draft.answer, [0, 0], None, "en"))
    assert [nobody.options[i]["marks"] for i in (0, 1)] == [[], ["model"]]


@pytest.mark.parametrize("counts", [[1, 2, 5, 0], [3, 3, 0, 1], [0, 0, 0, 0]])
def test_the_projectors_reveal_marks_the_model_and_the_class_and_no_one_as_yours(counts):
    draft = attend(["a", "b", "c", "d"])
    seen = Reveal(reveal_html(draft.payload, draft.reveal, draft.answer, counts, None, "en", scale=1.6))
    assert [tuple(seen.options[i]["marks"]) for i in range(4)] == marks(draft.answer, counts, None)
    assert not any("you" in o["marks"] or "▼ you" in " ".join(o["text"]) for o in seen.options.values())
    favourites = [i for i, c in enumerate(counts) if sum(counts) and c == max(counts)]
    assert [i for i in range(4) if "class" in seen.options[i]["marks"]] == favourites and "model" in seen.options[1][
        "marks"
    ]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_head_grid_shows_scores_and_picks_and_frames_the_models_the_class_and_yours(lang):
    draft = head_role_question(np.array([[0.1, 0.9], [0.3, 0.2]]), "previous", "lm", "x")
    seen = Reveal(reveal_html(draft.payload, draft.reveal, draft.answer, [0, 1, 4, 0], 3, lang))
    assert [seen.options[i]["marks"] for i in range(4)] == [[], ["model"], ["class"], ["you"]]
    for i, (score, count) in enumerate(zip([0.1, 0.9, 0.3, 0.2], [0, 1, 4, 0])):
        assert seen.option_text(i) == f"{score:.2f} {count}"  # the score over how many picked it (the key says so)
    frames = {i: " ".join(o["inner"]) for i, o in seen.options.items()}
    assert "3px solid #000000" in frames[1] and "3px dashed #E8730C" in frames[2] and "3px dotted #0E7C3A" in frames[3]
    assert "border:" not in frames[0]
    assert "background:rgb(122,182,218)" in seen.options[1]["style"]  # 0.9 of the way from white to the heat map's blue
    heads = {"en": ("head 2", "layer 2", "previous token score", "how many students picked"),
             "ko": ("2번 헤드", "레이어 2", "바로 앞 토큰", "고른 학생 수")}[lang]  # fmt: skip
    text = " ".join(seen.text)
    assert all(word in text for word in heads), text


def test_every_text_is_at_least_the_pages_font_size_and_dark():
    draft = attend()
    markup = reveal_html(draft.payload, draft.reveal, draft.answer, [1, 0, 0, 0], None, "en")
    sizes = [float(s) for s in re.findall(r"font-size:\s*([\d.]+)px", markup)]
    assert sizes == [17.0] and "font-size: 0." not in markup  # one size in px at the root, em above 1 inside
    assert "color: #111" in markup
    presenter = reveal_html(draft.payload, draft.reveal, draft.answer, [1, 0, 0, 0], None, "en", scale=1.5)
    assert "font-size:26px" in presenter
