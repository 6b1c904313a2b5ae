"""AppTest of the Generate page (the bundled review language model): continuation, step figures with
the look-ahead mask, forcing a token, heads off, Korean, and bad input (empty or too long prompt,
10,000 steps, temperature 0 and 1e6, top-p 0)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.app_helpers import array, figures, open_app, texts
from tests.test_continuation import shown_text
from ui.continuation import NEW_TOKENS_CLASS

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
REVIEW = {"gen_model": "review-lm"}  # the model these tests compute against (English starts on SmolLM2)


def run(at):
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def continuation(at) -> str:
    """The prompt and the continuation as a reader sees them (the Generate page writes them as HTML)."""
    return next(shown_text(h.value) for h in at.get("html") if NEW_TOKENS_CLASS in h.value)


def test_generate_page_shows_the_continuation_and_every_heads_masked_row():
    at = open_app("generate", state=dict(REVIEW))
    assert at.title[0].value == "Generate"
    assert continuation(at).startswith("This movie was")
    assert any(c.startswith("20 new tokens") for c in texts(at.caption))
    figs = figures(at)
    assert {"generate-next", "generate-rows", "generate-mask"} <= set(figs)
    rows = array(figs["generate-rows"]["data"][0]["z"])
    cfg_rows = len(figs["generate-rows"]["data"][0]["y"])
    assert rows.shape == (cfg_rows, 4)  # step 1: the prefix is <|endoftext|> This ␣movie ␣was
    np.testing.assert_allclose(rows.sum(-1), 1.0, atol=1e-4)
    mask = array(figs["generate-mask"]["data"][0]["z"])
    assert mask.shape == (4, 4)
    assert np.isnan(mask[np.triu_indices(4, 1)]).all()  # blocked by the look-ahead mask
    np.testing.assert_allclose(np.nan_to_num(mask).sum(-1), 1.0, atol=1e-4)
    assert len(at.dataframe[0].value) == cfg_rows  # one row per head: what it reads most
    bars = figs["generate-next"]["data"]
    assert len(bars) == 1 and len(bars[0]["y"]) == 10  # greedy: the model's probabilities only


def test_korean_prompt_and_interface():
    at = open_app("generate", state=dict(REVIEW), lang="ko")
    assert at.title[0].value == "생성"
    assert continuation(at).startswith("이 영화 정말")
    assert {"generate-next", "generate-rows", "generate-mask"} <= set(figures(at))


def test_stepping_shows_a_longer_prefix():
    at = open_app("generate", state=dict(REVIEW))
    at.slider(key="gen_step").set_value(5)
    run(at)
    mask = array(figures(at)["generate-mask"]["data"][0]["z"])
    assert mask.shape == (8, 8)


def test_forcing_a_token_changes_the_continuation():
    at = open_app("generate", state=dict(REVIEW))
    before = continuation(at)
    menu = at.selectbox(key="gen_force_choice")
    choice = menu.options[0]
    menu.set_value(choice)
    run(at)
    at.button(key="gen_force_go").click()
    run(at)
    after = continuation(at)
    assert after != before
    assert any(m.startswith("Step 1:") and "forced" in m for m in texts(at.markdown))
    assert any(c.startswith("Without forced tokens") for c in texts(at.caption))
    at.button(key="gen_force_clear").click()
    run(at)
    assert continuation(at) == before


def test_heads_off_moves_the_distribution():
    at = open_app("generate", state=dict(REVIEW))
    at.multiselect(key="gen_heads_off").set_value(["1.1", "2.1"])
    run(at)
    assert "generate-shift" in figures(at)
    caption = next(c for c in texts(at.caption) if c.startswith("Total variation distance"))
    assert float(caption.split(": ")[1].split(" ")[0]) > 0.0


def test_seeded_sampling_repeats():
    at = open_app("generate", state=dict(REVIEW))
    at.radio(key="gen_mode").set_value("sample")
    run(at)
    at.number_input(key="gen_seed").set_value(7)
    run(at)
    first = continuation(at)
    assert len(figures(at)["generate-next"]["data"]) == 2  # sampling: also what is drawn from
    at.number_input(key="gen_top_k").set_value(40)
    run(at)
    at.number_input(key="gen_top_k").set_value(0)
    run(at)
    assert continuation(at) == first


def test_empty_prompt_starts_from_the_start_token():
    at = open_app("generate", state=dict(REVIEW))
    at.text_area(key="gen_prompt").set_value("")
    run(at)
    assert any("prompt is empty" in m for m in texts(at.info))
    assert "generate-rows" in figures(at)


def test_too_long_prompt_is_refused_with_a_message():
    at = open_app("generate", state=dict(REVIEW))
    at.text_area(key="gen_prompt").set_value("good movie " * 200)
    run(at)
    assert any("Shorten it by" in m for m in texts(at.error))
    assert "generate-rows" not in figures(at)


def test_ten_thousand_steps_are_bounded_by_the_context():
    at = open_app("generate", state=dict(REVIEW))
    at.number_input(key="gen_steps").set_value(10_000)
    run(at)
    assert any(m.startswith("10,000 steps asked") for m in texts(at.info))
    assert any("the context" in c and "is full" in c for c in texts(at.caption))


@pytest.mark.parametrize(
    "setting, value, message",
    [("gen_temperature", 0.0, "sampling is greedy"), ("gen_temperature", 1e6, "nearly uniform"),
     ("gen_top_p", 0.0, "keeps only the most likely token")],
)  # fmt: skip
def test_extreme_sampling_settings_give_a_message_and_a_result(setting, value, message):
    at = open_app("generate", state=dict(REVIEW))
    at.radio(key="gen_mode").set_value("sample")
    run(at)
    at.number_input(key=setting).set_value(value)
    run(at)
    assert any(message in m for m in texts(at.info))
    assert continuation(at).startswith("This movie was")


def test_a_new_address_gives_its_prompt_even_after_one_was_typed():
    """A lesson step (or a shared link) names the prompt in the address; in a session that already has a
    prompt, the new address's prompt is the one shown (the Korean lesson after the English one)."""
    at = open_app("generate", state=dict(REVIEW), gen_prompt="This movie was")
    assert at.text_area(key="gen_prompt").value == "This movie was"
    at.query_params["gen_prompt"] = "이 영화는 정말"
    at.run()
    assert at.text_area(key="gen_prompt").value == "이 영화는 정말"
    at.text_area(key="gen_prompt").input("I typed this").run()  # typing still wins over the address it updates
    assert at.text_area(key="gen_prompt").value == "I typed this"


def test_a_drawn_token_outside_the_top_ten_is_among_the_bars():
    """Issue 50: "Step 1: ␣on (probability 0.7 %, chosen by the model)" named a token the bars did not draw.
    At temperature 3, seed 2, step 1 draws review-lm's 70th likeliest token after "This movie was"."""
    at = open_app("generate", state=dict(REVIEW, gen_mode="sample", gen_temperature=3.0, gen_seed=2))
    bars = figures(at)["generate-next"]["data"]
    labels = bars[0]["y"]
    assert len(labels) == 11 and labels[-1].startswith("▶ 70. ")
    assert sum(label.startswith("▶") for label in labels) == 1
    chosen = labels[-1].removeprefix("▶ 70. ")
    step = next(m for m in texts(at.markdown) if m.startswith("Step 1:"))
    assert chosen in step.replace("\\", "") and "#70" in step and "outside the ten likeliest" in step
    assert array(bars[0]["x"])[-1] < array(bars[0]["x"])[9]  # the model's own probability, below the tenth


def test_a_pasted_prompt_over_the_limit_is_cut_with_a_message():
    """Issue 50, item 8: a paste over the box's 4,000 characters was dropped by the browser in silence."""
    at = open_app("generate", state=dict(REVIEW))
    at.text_area(key="gen_prompt").set_value("good " * 1000)
    run(at)
    assert any("5,000" in w.value and "4,000" in w.value for w in at.warning)


def test_the_prompt_chips_spell_what_each_piece_stands_for():
    """A byte-level piece that is part of a character (each of 😀's four bytes) is shown with the character
    it belongs to, never as \\xf0; the start token is marked and coloured as special."""
    from ui.markdown import SPECIAL

    at = open_app("generate", state=dict(REVIEW, gen_prompt="영화가 좋았다 😀"))
    chips = next(m for m in texts(at.markdown) if "-background[" in m and "좋았다" in m)
    assert "\\x" not in chips and "😀" in chips
    assert chips.startswith(f":{SPECIAL}-background[⟨endoftext⟩]")
