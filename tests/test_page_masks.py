"""AppTest of the Masks page: the padded batch, its masks, and one head step by step against the model."""

import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.app_helpers import figures, open_app, texts
from tests.test_page_positional import plotly_array
from transformer import analyze, load_model

ROOT = Path(__file__).resolve().parent.parent
PAGE = "pages/masks.py"
BATCH = "The cat sat on the mat.\nI loved this movie!\nBoring."  # 7, 5 and 2 tokens


@pytest.fixture(scope="module")
def reference():
    """The bundled model's own analysis of the default batch."""
    return analyze(load_model(ROOT / "assets" / "models" / "imdb-sentiment"), BATCH.splitlines())


def open_page(text: str = BATCH, view: str = "step", **state) -> AppTest:
    """The page's ``view`` (padding, look-ahead, step) after one run on the shared sentence box's ``text``
    (from the address, as a shared link gives both), with widget values (by key) set beforehand in ``state``."""
    return open_app("masks", state=state, by_link=True, text=text, mask_view=view)


def stage(at: AppTest, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(values with blocked cells NaN, blocked cells) of a stage heatmap."""
    data = figures(at)[f"stage-{name}"]["data"]
    values = plotly_array(data[0]["z"]).astype(float)
    blocked = np.zeros(values.shape, bool) if len(data) == 1 else ~np.isnan(plotly_array(data[1]["z"]).astype(float))
    return values, blocked


def weights(at: AppTest) -> np.ndarray:
    values, blocked = stage(at, "weights")
    return np.where(blocked, 0.0, values)


def test_padded_batch_and_its_padding_masks(reference):
    at = open_page(view="padding")
    table = at.dataframe[0].value
    pad = f"{reference.ids[2, -1]} <pad>"
    assert table.shape == (3, 7)
    assert table.iloc[2, 2:].tolist() == [pad] * 5 and table.iloc[1, 5:].tolist() == [pad] * 2
    assert "<pad>" not in " ".join(table.iloc[0])
    assert table.iloc[0, 1].split(" ", 1) == [
        str(reference.ids[0, 1]),
        "cat" if not reference.unknown[0][1] else "<unk> (cat)",
    ]
    assert any("(B, 1, T, T) = (3, 1, 7, 7)" in m.value for m in at.markdown)
    assert any("queries** are *not* blocked" in m.value and "ignored" in m.value for m in at.markdown)
    level = plotly_array(figures(at)["padding-mask-1"]["data"][0]["z"])  # 0 blocked, 1 pad-query row, 2 open
    assert (level[:, 5:] == 0).all()  # <pad> keys blocked for every query
    assert (level[:5, :5] == 2).all() and (level[5:, :5] == 1).all()  # <pad> queries still attend, shown pale


def test_look_ahead_and_its_combination_with_padding():
    at = open_page(view="look-ahead", mask_sentence=1)  # "I loved this movie!" + 2 <pad>
    figs = figures(at)
    look_ahead = plotly_array(figs["la-look-ahead"]["data"][0]["z"]) > 0
    both = plotly_array(figs["la-both"]["data"][0]["z"]) > 0
    np.testing.assert_array_equal(look_ahead, np.tril(np.ones((7, 7), bool)))
    expected = np.tril(np.ones((7, 7), bool))
    expected[:, 5:] = False
    np.testing.assert_array_equal(both, expected)


@pytest.mark.parametrize("sentence, layer, head", [(0, 0, 0), (1, 1, 2)])
def test_default_steps_are_the_models_own_weights(reference, sentence, layer, head):
    at = open_page(mask_sentence=sentence, mask_layer=layer + 1, mask_head=head + 1)  # numbered from 1
    shown = weights(at)
    assert np.abs(shown - reference.attention[sentence, layer, head]).max() <= 1e-5
    n = int(reference.lengths[sentence])
    assert np.abs(shown[:n, :n] - reference.attention_for(sentence)[layer, head]).max() <= 1e-5
    scaled, _ = stage(at, "scaled")
    np.testing.assert_allclose(scaled, reference.scores[sentence, layer, head], atol=1e-4)
    assert any("model's own mask" in s.value for s in at.success)


def test_blocking_a_key_gives_it_zero_and_renormalises_the_row():
    at = open_page()
    before = weights(at)
    at.multiselect(key="mask_toggle_0_7").set_value([1 * 7 + 3]).run()  # query 1 (cat) -> key 3 (on)
    assert not at.exception
    after = weights(at)
    _, blocked = stage(at, "weights")
    assert blocked[1, 3] and blocked.sum() == 1 and after[1, 3] == 0
    expected = before[1] / (1 - before[1, 3])
    expected[3] = 0
    np.testing.assert_allclose(after[1], expected, atol=1e-5)
    np.testing.assert_allclose(after[[0, 2, 3, 4, 5, 6]], before[[0, 2, 3, 4, 5, 6]], atol=1e-6)
    said = " ".join(m.value for m in at.markdown)
    assert f"moved its {before[1, 3]:.2f} weight to the other keys" in said and "`1:cat`" in said
    masked, masked_blocked = stage(at, "masked")
    assert masked_blocked[1, 3] and np.isnan(masked[1, 3])


def test_look_ahead_preset_and_fill(reference):
    at = open_page(mask_preset="look-ahead")
    shown = weights(at)
    assert np.triu(shown, 1).max() == 0 and shown[0, 0] == pytest.approx(1.0)
    np.testing.assert_allclose(shown.sum(-1), 1.0, atol=1e-5)
    at.radio(key="mask_fill").set_value(-1e10).run()
    np.testing.assert_allclose(weights(at), shown, atol=0)
    assert "−1e10" in figures(at)["stage-masked"]["layout"]["title"]["text"]


def test_worked_example_numbers(reference):
    at = open_page(mask_query_0_7=2)  # "sat"
    shown = weights(at)
    walk = figures(at)["walkthrough"]["data"]
    np.testing.assert_allclose(plotly_array(walk[1]["y"]), shown[2], atol=1e-5)
    rows = plotly_array(figures(at)["weighted-sum"]["data"][0]["z"])
    output, _ = stage(at, "output")
    np.testing.assert_allclose(rows[-1], output[2], atol=1e-5)
    np.testing.assert_allclose(rows[:-1].sum(0), rows[-1], atol=1e-5)
    assert any("For `2:sat`" in m.value for m in at.markdown)


@pytest.mark.parametrize(
    "batch, message",
    [
        ("\n \n", "Type at least one sentence"),
        ('the cat\n""', "no words after tokenising"),
    ],
)
def test_bad_batches_say_what_happened(batch, message):
    at = open_page(batch)
    said = [m.value for m in (*at.info, *at.warning, *at.error)]
    assert any(message in s for s in said), said


def test_unknown_words_and_long_batches():
    at = open_page("qwzx blorf\n" + "\n".join(f"sentence number {i}" for i in range(8)), view="padding")
    assert at.dataframe[0].value.iloc[0, 0] == "0 <unk> (qwzx)"
    assert at.dataframe[0].value.shape[0] == 6
    assert any("The first 6 of 9" in w.value for w in at.warning)


def test_long_sentences_are_cut_to_a_readable_grid():
    at = open_page(" ".join(["word"] * 80) + "\nshort one", view="padding")
    assert at.dataframe[0].value.shape == (2, 64)
    assert any("at most 64 tokens" in w.value for w in at.warning)
    at.segmented_control(key="mask_view").set_value("step").run()
    assert plotly_array(figures(at)["stage-weights"]["data"][0]["z"]).shape == (64, 64)
    assert not at.multiselect  # switching single cells is offered up to 24 tokens only
    assert any("up to 24 tokens" in c.value for c in at.caption)


def test_the_shared_sentence_is_the_batch_and_stays_in_the_address():
    at = open_app("playground")
    at.text_area(key="text").input("the movie was not good at all , sadly").run()
    at.switch_page(PAGE).run()  # what was typed on another page is the batch here (the padding view first)
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    assert table.shape[0] == 3  # the sentence, and two shorter ones added to show padding
    assert table.iloc[0, 1].endswith("movie") and at.text_area(key="text").value.startswith("the movie was not")
    at.toggle(key="mask_pad_demo").set_value(False).run()
    assert at.dataframe[0].value.shape == (1, 9)
    at.segmented_control(key="mask_view").set_value("step").run()
    assert at.selectbox(key="mask_layer").options == ["1", "2"] and at.selectbox(key="mask_head").value == 1


def test_ten_tokens_get_full_width_stages_with_numbers_that_fit():
    at = open_page("it was not a bad one at all , no")
    spec = figures(at)["stage-scaled"]
    text = spec["data"][0]["text"]
    assert len(text) == 10 and all(len(cell) <= 6 for row in text for cell in row)  # e.g. "-12.34"
    assert spec["layout"]["xaxis"]["tickangle"] == 0  # ten labels fit across the page: not turned


def test_a_model_with_nan_weights_shows_the_masks_and_a_message(tiny_bundle):
    from tests.test_page_attention import nan_model, open_with_model

    at = open_with_model(nan_model(tiny_bundle), "masks", text="the movie was great\nbad", mask_view="step")
    assert not at.exception, [e.value for e in at.exception]
    assert any("NaN or infinite" in e.value for e in at.error)
    assert "step-mask" in figures(at) and "stage-weights" not in figures(at)


def test_encoder_decoder_steps_through_the_real_decoder(tmp_path, tiny_vocab):
    from tests.test_page_attention import open_with_model, seq2seq_model

    loaded = seq2seq_model(tmp_path, tiny_vocab)
    at = open_with_model(loaded, "masks", text="the movie was great", mask_view="look-ahead")
    assert not at.exception, [e.value for e in at.exception]
    result = analyze(loaded, ["the movie was great", *BATCH.splitlines()[1:]], 64)
    m = len(result.decoder_tokens[0])
    data = figures(at)["dec-stage-weights"]["data"]
    shown = np.where(np.isnan(plotly_array(data[0]["z"]).astype(float)), 0.0, plotly_array(data[0]["z"]))
    assert shown.shape == (m, m) and (np.triu(shown, k=1) == 0).all()
    np.testing.assert_allclose(shown, result.decoder_self_attention[0, 0, 0, :m, :m], atol=1e-5)
    look_ahead = plotly_array(figures(at)["dec-look-ahead"]["data"][0]["z"]) > 0
    np.testing.assert_array_equal(look_ahead, np.tril(np.ones((m, m), bool)))
    at.selectbox(key="dec_layer").select(2).run()
    at.selectbox(key="dec_head").select(3).run()
    data = figures(at)["dec-stage-weights"]["data"]
    shown = np.where(np.isnan(plotly_array(data[0]["z"]).astype(float)), 0.0, plotly_array(data[0]["z"]))
    np.testing.assert_allclose(shown, result.decoder_self_attention[0, 1, 2, :m, :m], atol=1e-5)
    assert any("layer 2, head 3" in s.value for s in at.success)


def run_fragment(at: AppTest, key: str, monkeypatch) -> AppTest:
    """Rerun only the fragment named ``key``, as the browser asks when a widget inside it changes
    (AppTest itself always reruns the whole script). The tree then holds that fragment's elements only."""
    from functools import partial

    from streamlit.testing.v1 import local_script_runner

    ids = list(at._fragment_storage._ids_by_target_key[key])
    assert ids, f"no fragment {key!r} in the last run"
    with monkeypatch.context() as patch:
        patch.setattr(local_script_runner, "RerunData", partial(local_script_runner.RerunData, fragment_id_queue=ids))
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_cell_toggle_reruns_only_the_stepper_fragment(monkeypatch):
    at = open_page()
    before = weights(at)
    mask_before = plotly_array(figures(at)["step-mask"]["data"][0]["z"])
    assert at.sidebar.children and at.text_area(key="text") and "step-mask" in figures(at)
    at.multiselect(key="mask_toggle_0_7").set_value([1 * 7 + 3, 4 * 7 + 0])  # cat -> on, on -> the
    run_fragment(at, "mask_stepper", monkeypatch)
    figs = figures(at)
    assert not at.text_area  # the rest of the page (the batch box) did not run again
    assert not at.sidebar.children  # nor did the shell's sidebar
    mask_after = plotly_array(figs["step-mask"]["data"][0]["z"])
    assert mask_before[1, 3] == 2 and mask_after[1, 3] == 0 and mask_before[4, 0] == 2 and mask_after[4, 0] == 0
    assert (mask_after != mask_before).sum() == 2
    assert len(figs["step-mask"]["layout"]["shapes"]) == 2  # both changed cells outlined
    after = weights(at)
    for q, k in ((1, 3), (4, 0)):
        expected = before[q] / (1 - before[q, k])
        expected[k] = 0
        np.testing.assert_allclose(after[q], expected, atol=1e-5)
    np.testing.assert_allclose(after[[0, 2, 3, 5, 6]], before[[0, 2, 3, 5, 6]], atol=1e-6)
    assert any("2 cell(s) differ" in m.value for m in at.markdown)


def test_the_decoder_head_reruns_alone(tmp_path, tiny_vocab, monkeypatch):
    from tests.test_page_attention import open_with_model, seq2seq_model

    loaded = seq2seq_model(tmp_path, tiny_vocab)
    at = open_with_model(loaded, "masks", text="the movie was great", mask_view="look-ahead")
    result = analyze(loaded, ["the movie was great", *BATCH.splitlines()[1:]], 64)
    m = len(result.decoder_tokens[0])
    at.selectbox(key="dec_head").select(2)
    run_fragment(at, "decoder_stepper", monkeypatch)
    figs = figures(at)
    assert "dec-look-ahead" not in figs and "stage-weights" not in figs  # the rest of the page did not run
    data = figs["dec-stage-weights"]["data"]
    shown = np.where(np.isnan(plotly_array(data[0]["z"]).astype(float)), 0.0, plotly_array(data[0]["z"]))
    np.testing.assert_allclose(shown, result.decoder_self_attention[0, 0, 1, :m, :m], atol=1e-5)
    assert any("layer 1, head 2" in s.value for s in at.success)


def test_the_language_model_steps_through_its_own_masked_self_attention():
    """Issue 27: the look-ahead view steps through the bundled language model's head on the chosen sentence."""
    import torch

    from transformer.core.bpe_text import encode_prompt

    at = open_page(view="look-ahead", mask_sentence=1, lm_model="review-lm", lm_layer=2, lm_head=3)
    lm = load_model(ROOT / "assets" / "models" / "review-lm")  # English starts on SmolLM2: review-lm is chosen
    ids = encode_prompt(lm.lm_tokenizer, BATCH.splitlines()[1]).ids
    with torch.no_grad():
        own = lm.model(torch.tensor([ids]), need_weights=True).attention[1].weights[0, 2].numpy()
    data = figures(at)["lm-stage-weights"]["data"]
    shown = plotly_array(data[0]["z"]).astype(float)
    assert shown.shape == (len(ids), len(ids))
    np.testing.assert_allclose(np.nan_to_num(shown), own, atol=5e-4)  # the cells print 3 decimals at most
    assert (np.nan_to_num(np.triu(shown, 1)) == 0).all()
    assert any("language model's own weights for layer 2, head 3" in s.value for s in at.success)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_bert_vocabulary_is_padded_with_its_own_pad_token(lang):
    """minilm-sentiment's tokens are [PAD] and [UNK]: the padding view names them, never <pad>/<unk>."""
    at = open_app("masks", chosen="minilm-sentiment", by_link=True, text="the movie was great", mask_view="padding",
                  lang=lang)  # fmt: skip
    intro = " ".join(texts(at.markdown))
    assert "`[PAD]`" in intro and "`<pad>`" not in intro and "`<unk>`" not in intro
    cells = [str(c) for c in at.dataframe[0].value.to_numpy().ravel()]
    assert any(c.endswith("[PAD]") for c in cells) and not any("<pad>" in c for c in cells)
    drawn = json.dumps(figures(at)["padding-mask-0"], ensure_ascii=False)
    assert "[PAD]" in drawn and "<pad>" not in drawn
