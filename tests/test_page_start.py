"""AppTest of the Start page, the guided tour, sharing a view and presenter mode."""

from __future__ import annotations

import urllib.parse

import pytest
from streamlit.testing.v1 import AppTest

from ui.i18n import translate
from ui.share import qr_png, view_url
from ui.tour import LESSON, highlight_css

from .app_helpers import APP, figures, open_app

EXPECTED_ORDER = [
    "playground",
    "positional_encoding",
    "masks",
    "masks",
    "attention",
    "classifier",
    "classifier",
    "checkpoints",
]


def start(**query: str) -> AppTest:
    """The app's first page (Start) with ``query`` in the address."""
    at = AppTest.from_file(APP, default_timeout=90)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def links(at: AppTest) -> list[tuple[str, str, dict[str, list[str]]]]:
    """(label, page, query) of every page link on the page."""
    out = []
    for el in at.get("page_link"):
        out.append((el.proto.label, el.proto.page, urllib.parse.parse_qs(el.proto.query_string)))
    return out


def panel_markdown(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if m.value.startswith("**")]


def styles(at: AppTest) -> str:
    return "\n".join(el.proto.body for el in at.get("html"))


def test_start_is_the_first_page_and_links_every_lesson_step_in_order():
    at = start()
    assert at.title[0].value == translate("start.title", "en")
    found = [link for link in links(at) if link[0][:1].isdigit()]
    assert [page.split("/")[-1] for _, page, _ in found][:8] == EXPECTED_ORDER
    labels = [label for label, _, _ in found]
    assert labels[0] == "1. Tokens" and labels[4] == "5. Many heads and layers"
    assert labels[7] == "8. Your own model"
    # The steps open their pages in the state they need, in the session's language.
    attention = found[4][2]
    assert attention["layer"] == ["2"] and attention["head"] == ["3"] and attention["lang"] == ["en"]
    assert "zzqxv" in found[0][2]["text"][0]  # the tokens step shows an unknown word


def test_start_page_in_korean():
    at = start(lang="ko")
    assert at.title[0].value == translate("start.title", "ko")
    labels = [label for label, _, _ in links(at) if label[:1].isdigit()]
    assert labels[0] == "1. 토큰 (tokens)" and labels[3] == "4. 마스크 (mask)"
    assert all(query["lang"] == ["ko"] for _, _, query in links(at) if query)
    assert at.button(key="start_tour").label == "둘러보기 시작"
    assert translate("start.step_masks", "ko") in [c.value for c in at.caption]


def test_tour_walks_the_lesson_and_can_be_left_and_resumed():
    at = start()
    at.button(key="start_tour").click().run()
    assert not at.exception
    first = panel_markdown(at)[0]
    assert first.startswith("**Guided tour — step 1 of ") and first.endswith("· Tokens**")
    assert ".st-key-text" in styles(at)  # the sentence box is outlined
    assert at.text_area(key="text").value == LESSON[0].query["text"]
    at.button(key="tour_next").click().run()
    assert panel_markdown(at)[0].startswith("**Guided tour — step 2 of ")
    assert ".st-key-pe_d_model" in styles(at)
    at.button(key="tour_leave").click().run()
    assert not any(m.startswith("**Guided tour") for m in panel_markdown(at))
    at.switch_page("pages/start.py").run()
    resume = at.button(key="start_tour_resume")
    assert resume.label == "Resume the tour at step 2"
    resume.click().run()
    assert panel_markdown(at)[0].startswith("**Guided tour — step 2 of ")
    at.button(key="tour_back").click().run()
    assert panel_markdown(at)[0].startswith("**Guided tour — step 1 of ")


def test_tour_texts_follow_the_language():
    at = start(lang="ko")
    at.button(key="start_tour").click().run()
    assert panel_markdown(at)[0].startswith("**둘러보기 — ") and "1단계" in panel_markdown(at)[0]
    assert at.button(key="tour_next").label == "다음 단계"


def test_highlight_outlines_exactly_the_given_widgets():
    css = highlight_css(("layer", "head"))
    assert ".st-key-layer, .st-key-head {" in css and "outline: 4px" in css
    assert highlight_css(()) == ""


def test_share_gives_the_address_with_a_name_and_a_qr_code():
    at = start(lang="ko")
    at.switch_page("pages/attention.py").run()
    at.text_input(key="share_name").input("3차시 부정문").run()
    url = at.sidebar.get("code")[-1].value
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qs(parts.query)
    assert parts.path == "/attention"
    assert query["preset"] == ["3차시 부정문"] and query["lang"] == ["ko"]
    assert at.sidebar.get("image"), "the QR code image is missing"
    # The shared link opens the same view, and says which preset it is.
    opened = start(**{k: v[0] for k, v in query.items()})
    assert any("3차시 부정문" in i.value for i in opened.info)


def test_view_url_and_qr_code():
    url = view_url("http://host:8501", "attention", {"text": ["a b"], "layer": ["2"]}, " Lesson 1 ")
    assert url == "http://host:8501/attention?text=a%20b&layer=2&preset=Lesson%201"
    png = qr_png(url)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 200
    assert qr_png("http://h/x?text=" + "a" * 5000) is None  # too long for any QR code


def test_presenter_mode_from_the_address_collapses_the_sidebar_and_enlarges_text():
    at = start(present="1")
    assert at.toggle(key="present_toggle").value is True
    assert "font-size: 24px" in styles(at)
    at.toggle(key="present_toggle").set_value(False).run()
    assert "present" not in at.query_params and "font-size: 24px" not in styles(at)


@pytest.mark.parametrize(
    "page", ["attention", "positional_encoding", "masks", "playground", "classifier", "translate", "vision"]
)
def test_presenter_mode_figure_ticks_are_at_least_22px(page):
    at = start(present="1")
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception
    sizes = []
    for meta, spec in figures(at).items():
        for name, axis in spec["layout"].items():
            hidden = isinstance(axis, dict) and (axis.get("showticklabels") is False or axis.get("visible") is False)
            if name.startswith(("xaxis", "yaxis")) and isinstance(axis, dict) and not hidden:
                size = axis.get("tickfont", {}).get("size")
                sizes.append((meta, name, size))
    assert sizes, "no figure axes found"
    small = [s for s in sizes if s[2] is None or s[2] < 22]
    assert not small, f"tick labels under 22 px in presenter mode: {small[:5]}"


def test_one_head_step_opens_the_step_by_step_view_with_numbers_and_masks_step_the_padding_view():
    at = start()
    found = [link for link in links(at) if link[0][:1].isdigit()]
    assert found[2][2]["mask_view"] == ["step"] and found[3][2]["mask_view"] == ["padding"]
    at.button(key="start_tour").click().run()
    at.button(key="tour_next").click().run()
    at.button(key="tour_next").click().run()  # step 3: One head, step by step
    assert not at.exception, [e.value for e in at.exception]
    assert panel_markdown(at)[0].endswith("· One head, step by step**")
    assert at.segmented_control(key="mask_view").value == "step"
    assert at.text_area(key="text").value == LESSON[2].query["text"]
    figs = figures(at)
    assert "padding-mask-0" not in figs  # not the padding section
    for stage in ("stage-scores", "stage-scaled", "stage-masked", "stage-weights"):
        assert figs[stage]["data"][0]["texttemplate"], f"{stage}: no numbers in the cells"
    assert "scrollIntoView" in styles(at) and ".st-key-mask_layer" in styles(at)  # the tour scrolls there
    at.button(key="tour_next").click().run()  # step 4: Masks, with the padding switch it names
    assert at.segmented_control(key="mask_view").value == "padding"
    assert at.toggle(key="mask_pad_demo").value is True and "padding-mask-2" in figures(at)
    assert ".st-key-mask_pad_demo" in styles(at)


def test_fifteen_tokens_still_show_every_number():
    text = "The acting was wonderful and the story kept me hooked until the very end."  # 15 tokens
    at = open_app("masks", text=text, mask_view="step")
    for stage in ("stage-scaled", "stage-weights"):
        spec = figures(at)[stage]
        assert len(spec["data"][0]["z"]) == 15 if isinstance(spec["data"][0]["z"], list) else True
        assert spec["data"][0]["texttemplate"], f"{stage}: no numbers for 15 tokens"


def test_every_outlined_control_of_a_step_exists_on_its_page():
    """The tour outlines what its text names: each highlighted key is a widget the page draws in the
    step's state (a key that is not drawn outlines nothing, as step 4's padding switch did)."""
    at = start()
    at.button(key="start_tour").click().run()
    for number, step in enumerate(LESSON[:8], start=1):
        assert not at.exception, (number, [e.value for e in at.exception])
        drawn = {getattr(el, "key", None) for el in at.main if getattr(el, "key", None)}
        drawn |= {el.proto.id for el in at.get("plotly_chart")}
        optional = {"classifier_target"}  # drawn for models with more than two classes only
        missing = [key for key in step.highlight if key not in drawn and key not in optional]
        assert not missing, f"step {number}: outlined keys not on the page: {missing}"
        if number < 8:
            at.button(key="tour_next").click().run()


def test_the_shared_link_names_an_address_students_can_reach():
    from ui.share import class_base

    # the teacher's browser used localhost: the link names the server's network address instead
    assert class_base("http://localhost:8501", "", "192.168.0.10") == ("http://192.168.0.10:8501", True)
    assert class_base("http://127.0.0.1:8501", "0.0.0.0", "10.0.0.5") == ("http://10.0.0.5:8501", True)
    # an address other machines already reach stays as it is
    assert class_base("http://192.168.0.10:8501", "", "192.168.0.10") == ("http://192.168.0.10:8501", True)
    assert class_base("https://lab.school.kr", "", None) == ("https://lab.school.kr", True)
    # local only: listening on loopback, or no network at all
    assert class_base("http://localhost:8501", "127.0.0.1", "192.168.0.10") == ("http://localhost:8501", False)
    assert class_base("http://localhost:8501", "", None) == ("http://localhost:8501", False)


def test_a_local_only_link_says_so(monkeypatch):
    import ui.share

    monkeypatch.setattr(ui.share, "network_address", lambda: None)
    at = start()
    at.switch_page("pages/attention.py").run()
    at.text_input(key="share_name").input("lesson").run()
    assert any("cannot open it" in w.value for w in at.sidebar.warning)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_lesson_steps_through_the_language_model_in_both_languages(lang):
    from .app_helpers import open_app

    step = next(s for s in LESSON if s.page == "pages/generate.py")
    query = {**step.query, **(step.query_ko if lang == "ko" else {})}
    at = open_app("generate", lang=lang, **query)
    assert at.text_area(key="gen_prompt").value == query["gen_prompt"]
    assert "generate-next" in figures(at) and "generate-mask" in figures(at)
    assert translate(step.title_key, lang) and translate(step.body_key, "ko") != translate(step.body_key, "en")


def test_the_korean_tour_gives_each_step_its_korean_values():
    """The tour sets a step's widgets from ``query_ko`` in Korean: the Korean sentence on the first step
    and the Korean prompt on the language model's step."""
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params["lang"] = "ko"
    at.run()
    at.button(key="start_tour").click().run()
    assert at.text_area(key="text").value == LESSON[0].query_ko["text"]
    from ui.tour import PENDING_KEY, STEP_KEY

    generate = next(i for i, s in enumerate(LESSON) if s.page == "pages/generate.py")
    at.session_state[STEP_KEY] = generate  # as the Next button leaves it, without drawing every page between
    at.session_state[PENDING_KEY] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.text_area(key="gen_prompt").value == LESSON[generate].query_ko["gen_prompt"]


@pytest.mark.parametrize(
    "lang, model, says, never",
    [
        ("en", None, ["**imdb-sentiment**", "movie reviews (IMDB)", "English only"], ["Korean"]),
        ("ko", None, ["**nsmc-sentiment**", "한국어 영화 리뷰(NSMC)", "한국어만 읽습니다"], ["IMDB", "영어"]),
        ("ko", "imdb-sentiment", ["**imdb-sentiment**", "영화 리뷰(IMDB)", "영어만 읽습니다"], ["NSMC", "한국어만"]),
        ("en", "nsmc-sentiment", ["**nsmc-sentiment**", "Korean movie reviews (NSMC)", "Korean only"], ["IMDB"]),
        ("en", "imdb-sst2-sentiment", ["movie reviews (IMDB) and short movie-review sentences (SST-2)"], []),
    ],
)
def test_start_page_describes_the_model_it_runs(lang, model, says, never):
    if model is None:
        at = start(lang=lang)
    else:  # chosen on a page with the model picker, then back to Start
        at = open_app("playground", lang=lang, model=model)
        at.switch_page("pages/start.py").run()
    prose = "\n".join(m.value for m in at.markdown).replace("\\", "")  # model names are markdown-escaped
    for text in says:
        assert text in prose, text
    for text in never:
        assert text not in prose, text
