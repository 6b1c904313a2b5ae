"""The Residual page (AppTest), every view in English and Korean: the logit lens's last row is the
model's own prediction; the waterfall's parts add up to the logit; switching heads off gives the
gated model's numbers; a clicked head opens its attention row; the head-space picture has a point
per query and key of every head; two models side by side; a translator and an imported masked LM."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.app_helpers import array, figures, open_app
from transformer.analysis.ablation import head_mask
from transformer.bundle import load_bundle
from transformer.core.bpe_text import encode_prompt
from ui.i18n import translate
from ui.models import MODELS_DIR

TEXT = "the film was long but the actors were wonderful and"


def run(at):
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


BOUND = ("rs_view", "rs_model", "rs_text", "rs_layer", "rs_left", "rs_right", "rs_compare_text")


def page(view: str, lang: str = "en", **state):
    """The page in ``lang`` on ``view``; widgets kept in the address set as a user would (one run
    each, in the order given), the others' values put in the session first."""
    at = open_app("residual", lang=lang)
    if view != "compare":
        state = {"rs_model": "review-lm", **state}  # the model these tests compute against (not the default SmolLM2)
    for key, value in state.items():
        if key not in BOUND:
            at.session_state[key] = value
    for key, value in {"rs_view": view, **state}.items():
        if key in BOUND:
            at.get_by_key(key).set_value(value)
            run(at)
    return run(at)


@pytest.fixture(scope="module")
def lm():
    torch.set_num_threads(1)
    loaded = load_bundle(MODELS_DIR / "review-lm")
    ids = torch.tensor([encode_prompt(loaded.lm_tokenizer, TEXT).ids])
    with torch.no_grad():
        logits = loaded.model(ids).logits[0]
    return loaded.model, ids, logits


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_lens_last_row_is_the_prediction(lm, lang):
    model, ids, logits = lm
    at = page("lens", lang, rs_text=TEXT)
    figs = figures(at)
    lens = figs["residual-lens"]["data"][0]
    z = array(lens["z"])
    assert z.shape == (model.config.num_layers + 1, ids.shape[1])
    np.testing.assert_allclose(z[-1], torch.softmax(logits.double(), -1).max(-1).values.numpy(), atol=1e-5)
    assert at.title[0].value == translate("residual.title", lang)
    assert "residual-answer" in figs
    rank = at.dataframe[0].value.iloc[-1, 2]
    assert rank == 1  # the last reading's answer is its own top token


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_waterfall_adds_up_to_the_logit(lm, lang):
    _, _, logits = lm
    at = page("contributions", lang, rs_text=TEXT)
    figs = figures(at)
    water = figs["residual-waterfall"]["data"][0]
    steps = array(water["y"])[:-1]
    logit = float(logits[-1].max())
    assert abs(steps.sum() - logit) < 1e-3
    heads = array(figs["residual-heads"]["data"][0]["z"])
    assert heads.shape == (2, 4)


def test_switching_heads_off_shows_the_gated_model(lm):
    model, ids, logits = lm
    at = page("contributions", rs_text=TEXT, rs_mode="ablation")
    change = array(figures(at)["residual-heads"]["data"][0]["z"])
    token = int(logits[-1].argmax())
    with torch.no_grad():
        off = model(ids, head_mask=head_mask(2, 4, [(1, 0)])).logits[0, -1, token]
    assert change[1, 0] == pytest.approx(float(off - logits[-1, token]), abs=1e-4)


def test_a_clicked_head_opens_its_attention_row(lm):
    model, ids, _ = lm
    at = page("contributions", rs_text=TEXT, rs_head=(1, 2))
    row = array(figures(at)["residual-row"]["data"][0]["y"])
    with torch.no_grad():
        expected = model(ids, need_weights=True).attention[1].weights[0, 2, -1].numpy()
    np.testing.assert_allclose(row, expected, atol=1e-5)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_head_space_has_every_query_and_key(lang):
    at = page("heads", lang, rs_source="pasted", rs_pasted="a good film\nthe plot was thin , sadly")
    traces = figures(at)["residual-space"]["data"]
    points = sum(len(array(tr["x"])) for tr in traces)
    tokens = 4 + 7  # each sentence's tokens (the start token first)
    assert points == 2 * 4 * tokens
    assert len(traces) == 8  # 4 heads × (queries, keys)
    assert translate("residual.fig_query", lang) in traces[0]["name"]


def test_head_space_by_token_kind_and_a_click():
    at = page("heads", rs_source="pasted", rs_pasted="a good film , really", rs_colour="kind")
    names = [tr["name"] for tr in figures(at)["residual-space"]["data"]]
    assert any(translate("residual.kind_punctuation", "en") in n for n in names)
    assert any(translate("residual.kind_special", "en") in n for n in names)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_two_models_side_by_side(lang):
    at = page("compare", lang, rs_left="imdb-sentiment", rs_right="imdb-sst2-sentiment", rs_compare_text="a great film")
    figs = figures(at)
    assert {"residual-grid-a", "residual-grid-b", "residual-prediction-a", "residual-prediction-b"} <= set(figs)
    probs = array(figs["residual-prediction-a"]["data"][0]["x"])
    assert probs.sum() == pytest.approx(1.0, abs=1e-5)


def test_a_link_opens_its_view_in_either_language():
    """?rs_view=heads (the option itself, not its label) opens that view in Korean too, and the address keeps the view."""
    for lang in ("en", "ko"):
        at = open_app("residual", lang=lang)
        at.query_params["rs_view"] = "heads"
        run(at)
        assert "residual-space" in figures(at)
        at.get_by_key("rs_view").set_value("lens")
        run(at)
        assert "residual-lens" in figures(at) and at.query_params["rs_view"] == "lens"


def test_translator_reads_its_own_output_with_cross_attention():
    at = page("contributions", rs_model="dates", rs_text="march 3 , 2021")
    figs = figures(at)
    heads = array(figs["residual-heads"]["data"][0]["z"])
    assert heads.shape == (2, 8)  # the cross-attention heads of the decoder's two layers
    at.get_by_key("rs_view").set_value("lens")
    figs = figures(run(at))
    assert array(figs["residual-lens"]["data"][0]["z"]).shape[0] == 3


def open_imported(tmp_path, arch: str, view: str, text: str):
    """The page on ``view`` of a tiny Hugging Face ``arch`` imported as an upload and chosen, reading ``text``;
    with transformers' model and tokenizer of the same folder."""
    pytest.importorskip("transformers")
    from tests.hf_models import make_folder
    from transformer.hf.importer import load_hf_folder
    from ui.session import upload_key

    folder, reference, tok = make_folder(arch, tmp_path / arch)
    key = upload_key(f"tiny-{arch}")
    state = {"rs_view": view, "rs_model": key, "rs_text": text}
    return open_app("residual", uploads={key: load_hf_folder(folder)}, chosen=key, state=state), reference, tok


def test_imported_masked_lm_lens_at_the_blank(tmp_path):
    text = "the movie was [MASK] really"
    at, reference, tok = open_imported(tmp_path, "bert-mlm", "lens", text)
    z = array(figures(at)["residual-lens"]["data"][0]["z"])
    ids = torch.tensor([tok(text)["input_ids"]])
    with torch.no_grad():
        expected = torch.softmax(reference(ids).logits[0].double(), -1).max(-1).values.numpy()
    np.testing.assert_allclose(z[-1], expected, atol=1e-5)


def test_imported_gpt2_contributions_add_up_to_its_logit(tmp_path):
    text = "the movie was really good"
    at, reference, tok = open_imported(tmp_path, "gpt2", "contributions", text)
    steps = array(figures(at)["residual-waterfall"]["data"][0]["y"])[:-1]
    ids = torch.tensor([tok(text)["input_ids"]])  # an imported GPT-2 reads its tokenizer's ids, as on Generate
    with torch.no_grad():
        logits = reference(ids).logits[0, -1]
    assert abs(steps.sum() - float(logits.max())) < 1e-3


def test_typed_token_is_echoed_escaped_and_cut():
    """Issue 50, item 8: the token box's text went into a warning as Markdown (an image fetched, bold,
    LaTeX) and whole (1 MB)."""
    typed = "![i](http://127.0.0.1:9/x.png) **bold** $x^2$ :red[r] " + "y" * 100_000
    at = page("contributions", rs_text=TEXT, rs_token=typed)
    warning = at.warning[0].value
    assert len(warning) < 300
    assert "\\!\\[i\\]" in warning and "**bold**" not in warning and "\\$x" in warning and "\\:red\\[r\\]" in warning


def test_a_text_over_the_limit_is_cut_with_the_links_message():
    at = page("lens", rs_text="good " * 1000)  # 5,000 characters
    assert any("5,000" in w and "4,000" in w for w in (m.value for m in at.warning))
    assert "residual-lens" in figures(at)
