"""Every lesson link carries its step's number; the page it opens scrolls to that step's controls, once."""

from __future__ import annotations

import urllib.parse

from streamlit.testing.v1 import AppTest

from tests.app_helpers import APP, open_app
from ui.tour import LINK_PARAM


def scripts(at: AppTest) -> str:
    return "\n".join(el.proto.body for el in at.get("html"))


def test_every_lesson_link_names_its_step():
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params["lang"] = "en"
    at.run()
    links = [el for el in at.get("page_link") if el.proto.label[:1].isdigit()]
    assert len(links) >= 8
    for number, link in enumerate(links, start=1):
        query = urllib.parse.parse_qs(link.proto.query_string)
        assert query[LINK_PARAM] == [str(number)], (link.proto.label, query)


def arrive(page: str, number: str) -> AppTest:
    """The app arrived at ``pages/<page>.py`` by a link carrying ``?lesson=<number>``."""
    at = open_app(page, lang="en", text="Not bad at all , the film was good")
    at.query_params[LINK_PARAM] = number
    at.run()
    assert not at.exception
    return at


def test_the_linked_page_scrolls_to_the_steps_controls_and_forgets_the_number():
    at = arrive("classifier", "7")
    assert "scrollIntoView" in scripts(at) and ".st-key-classifier_off_0" in scripts(at)
    assert LINK_PARAM not in at.query_params
    at.run()  # the next run (any click) does not pull the page back
    assert ".st-key-classifier_off_0" not in scripts(at)


def test_a_step_number_of_another_page_or_nonsense_scrolls_nowhere():
    for value in ("7", "x", "99"):
        at = arrive("attention", value)
        assert "scrollIntoView" not in scripts(at), value
