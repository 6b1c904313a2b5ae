"""The guided tour on the models the app ships as defaults (issue 50, item 1): every step in English
(minilm-sentiment: WordPiece, learned positions) and Korean (nsmc-sentiment: WordPiece, sinusoidal),
each outlined control drawn, and what each step's text claims visible on its page. A step that teaches
what the default lacks (sinusoidal positions) opens the course-sized model and says so in one line."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from ui.i18n import translate
from ui.tour import COURSE_MODEL, LESSON, has_feature, lesson_for_pages, model_note, step_model

from .app_helpers import APP, figures, texts

DEFAULTS = {"en": "minilm-sentiment", "ko": "nsmc-sentiment"}
OPTIONAL_KEYS = {"classifier_target"}  # drawn for models with more than two classes only


@pytest.fixture
def shipped_defaults(monkeypatch):
    """The defaults as shipped: the test suite's own English default (conftest) set aside."""
    monkeypatch.delenv("ATTENTION_LAB_ENGLISH_MODEL", raising=False)


def drawn_keys(at: AppTest) -> set[str]:
    keys = {getattr(el, "key", None) for el in at.main if getattr(el, "key", None)}
    return keys | {el.proto.id for el in at.get("plotly_chart")}


def markdown(at: AppTest) -> str:
    return "\n".join(texts(at.markdown)).replace("\\", "")


def claim_holds(name: str, at: AppTest, lang: str) -> None:
    """What the step's text says is on its page."""
    if name == "tokens":  # pieces, and the unknown token for a character no piece covers
        shown = markdown(at)
        assert "##" in shown, "no word pieces shown"
        assert "[UNK]" in shown or ":orange-background[✈]" in shown, "no unknown token shown"
    elif name == "positions":  # a sinusoidal model, whose sinusoid lab the outlined controls drive
        assert has_feature(at.session_state["model"], "sinusoidal")
    elif name == "one_head":
        stages = figures(at)
        assert all(stage in stages for stage in ("stage-scores", "stage-scaled", "stage-masked", "stage-weights"))
    elif name == "masks":
        assert at.toggle(key="mask_pad_demo").value is True and "padding-mask-2" in figures(at)
        keys = figures(at)["padding-mask-2"]["data"][0]["x"]  # the shortest sentence's keys: padded
        assert any(key.endswith(("&lt;pad&gt;", "<pad>", "[PAD]")) for key in keys), keys  # the model's own pad token
    elif name == "heads":
        assert at.session_state["layer"] == 2 and at.session_state["head"] == 3
    elif name == "heads_off":
        rows = [w for w in at.get("button_group") if str(getattr(w, "key", "")).startswith("classifier_off_")]
        assert rows and all(
            option.startswith(f"L{n + 1} H") for n, row in enumerate(rows) for option in row.options[:-1]
        )


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_step_holds_on_the_default_model(lang, shipped_defaults, monkeypatch):
    import importlib
    import pkgutil

    import ui
    import ui.i18n

    # AppTest formats some menus' options outside the script run, where no session says which language.
    # Every ui module is imported first: one imported while the patch holds would keep the patched function.
    for module in pkgutil.walk_packages(ui.__path__, "ui."):
        importlib.import_module(module.name)
    monkeypatch.setattr(ui.i18n, "current_lang", lambda: lang)
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params["lang"] = lang
    at.run()
    assert at.session_state["model"] == DEFAULTS[lang] if "model" in at.session_state else True
    at.button(key="start_tour").click().run()
    steps = lesson_for_pages([step.page.split("/")[-1][:-3] for step in LESSON])
    for number, step in enumerate(steps, start=1):
        assert not at.exception, (lang, number, [e.value for e in at.exception])
        name = step.title_key.split(".")[1].removesuffix("_title")
        missing = [key for key in step.highlight if key not in drawn_keys(at) and key not in OPTIONAL_KEYS]
        assert not missing, f"{lang} step {number} ({name}): outlined keys not on the page: {missing}"
        model, stand_in = step_model(step, lang)
        if model is not None:
            assert at.session_state["model"] == model, (lang, name)
        note = model_note(step, lang)
        assert bool(note) == stand_in and (not note or note in texts(at.caption)), (lang, name)
        claim_holds(name, at, lang)
        if number < len(steps):
            at.button(key="tour_next").click().run()


def test_only_the_english_positions_step_needs_the_course_sized_model(shipped_defaults):
    positions = next(step for step in LESSON if step.needs == "sinusoidal")
    assert step_model(positions, "en") == (COURSE_MODEL, True)
    assert step_model(positions, "ko") == (DEFAULTS["ko"], False)
    assert "sinusoidal positions" in model_note(positions, "en") and not model_note(positions, "ko")
    others = [step for step in LESSON if step is not positions]
    assert not any(step_model(step, lang)[1] for step in others for lang in ("en", "ko"))


def test_the_start_page_says_where_the_models_come_from_and_where_the_language_switch_is(shipped_defaults):
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    intro = markdown(at)
    assert "trained here from scratch" not in intro.replace("small ones trained here from scratch", "")
    assert "fine-tuned here" in intro and translate("start.class_text", "en").startswith("Switch between")
    assert "**minilm-sentiment**, is a pretrained encoder (sentence-transformers/all-MiniLM-L6-v2" in intro
    # "at the top of the sidebar": the switch comes before the page links
    sidebar = list(at.sidebar)
    switch = next(i for i, el in enumerate(sidebar) if getattr(el, "key", None) == "lang_switch")
    links = [i for i, el in enumerate(sidebar) if el.type == "page_link"]
    assert links and switch < min(links)
    captions = texts(at.caption)
    assert any("course-sized model, **imdb-sentiment**" in c for c in captions)  # step 2's link says it
