"""The shared sentence box: line splitting, limits, the sentence picker and the page carry-over."""

from __future__ import annotations

import types

import pytest

import ui.navigation as nav
import ui.session as session
from ui.text import MAX_CHARS, MAX_LINES, split_lines

from .app_helpers import open_app, texts


@pytest.mark.parametrize("sep", ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_separators_inside_a_line_do_not_split_it(sep):
    assert split_lines(f"good{sep}film\nbad movie") == [f"good{sep}film", "bad movie"]


def test_lines_split_on_newline_and_crlf_only_blank_lines_dropped():
    assert split_lines("a\r\nb\n\n  \nc\r") == ["a", "b", "c"]
    assert split_lines("\n".join(str(i) for i in range(100))) == [str(i) for i in range(MAX_LINES)]


class FakeStreamlit:
    """Just enough of ``st`` for ui.navigation: a session state and query parameters."""

    def __init__(self):
        self.session_state: dict = {}
        self.query_params: dict = {}


@pytest.fixture
def fake_st(monkeypatch):
    fake = FakeStreamlit()
    fake_module = types.SimpleNamespace(session_state=fake.session_state, query_params=fake.query_params)
    monkeypatch.setattr(nav, "st", fake_module)
    monkeypatch.setattr(session, "st", fake_module)  # ui.navigation keeps its entries through ui.session
    return fake


def draw(key: str, value):
    """One page run drawing the shared widget ``key``: carry-over, then the widget shows session state."""
    nav.carry_over(key, "default")
    shown = nav.st.session_state.get(key, value)
    nav.remember(key, shown)
    return shown


def test_carry_over_survives_a_run_interrupted_before_the_box_is_drawn(fake_st):
    nav.note_page("playground")
    assert draw("text", "typed on the playground") == "typed on the playground"
    nav.note_page("attention")  # this run is interrupted (a rerun) before the box is drawn
    fake_st.session_state["text"] = "stale value from the address"
    nav.note_page("attention")  # the rerun: same page, but the carry-over is still owed
    assert draw("text", None) == "typed on the playground"
    fake_st.session_state["text"] = "typed on attention"
    nav.remember_widget("text")  # the box's on_change callback
    nav.note_page("attention")
    assert draw("text", None) == "typed on attention"  # carried once only: the new text stays


def test_text_typed_while_a_switch_is_pending_is_what_the_next_page_shows(fake_st):
    nav.note_page("attention")
    draw("text", "old")
    nav.note_page("playground")  # arriving; interrupted before the box is drawn
    fake_st.session_state["text"] = "typed right after arriving"
    nav.remember_widget("text")  # the callback runs before the next run's script
    nav.note_page("playground")
    assert draw("text", None) == "typed right after arriving"
    nav.note_page("attention")
    assert draw("text", None) == "typed right after arriving"


def test_the_sentence_picker_follows_the_text():
    at = open_app("attention", text="the movie was not good at all\na truly great film")
    picker = at.selectbox(key="sentence")
    assert picker.options == ["1: the movie was not good at all", "2: a truly great film"]
    picker.set_value(1).run()
    at.text_area(key="text").input("first new line\nsecond new line\nthird").run()
    picker = at.selectbox(key="sentence")
    assert picker.options == ["1: first new line", "2: second new line", "3: third"]
    assert picker.value == 1 and picker.format_func(picker.value) == "2: second new line"


def test_text_over_the_limit_gets_a_message():
    at = open_app("playground", text="good " * (MAX_CHARS // 5 + 10))
    assert any(f"only the first {MAX_CHARS:,} are used" in w for w in texts(at.warning))


def test_more_lines_than_the_limit_get_a_message():
    at = open_app("playground", text="\n".join(["good"] * (MAX_LINES + 6)))
    assert any(f"first {MAX_LINES} of {MAX_LINES + 6} lines" in w for w in texts(at.warning))


class FakeWidgets:
    """Which element id holds each key now, and what each element id holds (Streamlit's SessionState)."""

    def __init__(self):
        self.holder: dict[str, str] = {}
        self.values: dict[str, object] = {}

    def get_widget_value(self, widget_id):
        return self.values[widget_id]


def test_text_sent_from_the_previous_pages_box_during_a_switch_is_kept(fake_st, monkeypatch):
    widgets = FakeWidgets()
    monkeypatch.setattr(nav.internals, "_session_state", lambda: widgets)
    monkeypatch.setattr(nav.internals, "widget_id", lambda key: widgets.holder.get(key))
    nav.note_page("playground")
    widgets.holder["text"] = "playground-box"
    old_box = nav.SharedWidgetChange("text")
    old_box.drawn()
    draw("text", "typed on the playground")
    nav.note_page("attention")  # the switch: Attention's box is drawn, the run is then interrupted
    widgets.holder["text"] = "attention-box"
    assert draw("text", None) == "typed on the playground"
    fake_st.session_state["text"] = "typed on the playground"  # st.session_state["text"] is Attention's box
    widgets.values["playground-box"] = "sent from the old box"  # what the browser sent, for the old box
    old_box()  # its on_change callback, before the next run
    assert nav.shared_value("text") == "sent from the old box"
    nav.note_page("attention")
    assert draw("text", None) == "sent from the old box"  # Attention's box shows it, not its older value


def test_the_current_boxs_callback_reads_the_key(fake_st, monkeypatch):
    widgets = FakeWidgets()
    monkeypatch.setattr(nav.internals, "_session_state", lambda: widgets)
    monkeypatch.setattr(nav.internals, "widget_id", lambda key: widgets.holder.get(key))
    widgets.holder["text"] = "attention-box"
    box = nav.SharedWidgetChange("text")
    box.drawn()
    fake_st.session_state["text"] = "typed"
    box()
    assert nav.shared_value("text") == "typed"
