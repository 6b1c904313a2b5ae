"""AppTest of the Positional encoding page: every control changes the figure data as it should."""

import base64
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.app_helpers import figures, open_app
from transformer import ModelConfig, analyze, build_model, load_model
from transformer.bundle import LoadedModel
from transformer.core.positional import sinusoidal_encoding
from transformer.core.tokenizer import Vocab

ROOT = Path(__file__).resolve().parent.parent


def open_page(text: str = "the cat sat on the mat", uploads: dict | None = None, **state) -> AppTest:
    """The page after one run, with widget values (by key) set beforehand in ``state``."""
    return open_app("positional_encoding", state=state, uploads=uploads, by_link=True, text=text)


def plotly_array(value) -> np.ndarray:
    """A figure's data array: plotly writes numpy arrays as base64 ``{"dtype", "bdata", "shape"}``."""
    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        return array.reshape([int(n) for n in str(shape).split(",")]) if shape else array
    return np.array(value, dtype=float)  # a plain list (None -> NaN)


def set_number(at: AppTest, key: str, value) -> AppTest:
    at.number_input(key=key).set_value(value).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def curve(at: AppTest, dim: int) -> np.ndarray:
    [trace] = [t for t in figures(at)["pe-curves"]["data"] if t["meta"] == dim]
    return plotly_array(trace["y"]).astype(float)


def measured_period(y: np.ndarray) -> float:
    """Period of a sine sampled at integer positions, from the spacing of its upward zero crossings."""
    ups = np.flatnonzero((y[:-1] < 0) & (y[1:] >= 0))
    return float(np.diff(ups).mean())


def test_heatmap_follows_d_model_and_length():
    at = open_page(pe_d_model=6, pe_length=30)
    z = plotly_array(figures(at)["pe-heatmap"]["data"][0]["z"])
    np.testing.assert_allclose(z, sinusoidal_encoding(30, 6), atol=1e-6)


def test_doubling_the_base_lengthens_the_slowest_period():
    at = open_page(pe_d_model=4, pe_length=2048)
    assert sorted(t["meta"] for t in figures(at)["pe-curves"]["data"]) == [0, 2]
    before = measured_period(curve(at, 2))  # dimension 2 of 4: sin(pos / base^(1/2))
    assert before == pytest.approx(2 * math.pi * 100, rel=0.01)
    set_number(at, "pe_base", 20000.0)
    after = measured_period(curve(at, 2))
    assert after == pytest.approx(2 * math.pi * math.sqrt(20000), rel=0.01)
    assert after / before == pytest.approx(math.sqrt(2), rel=0.02)
    assert measured_period(curve(at, 0)) == pytest.approx(2 * math.pi, rel=0.02)  # dimension 0 never changes
    periods = plotly_array(figures(at)["pe-periods"]["data"][0]["y"])
    assert periods[-1] == pytest.approx(2 * math.pi * math.sqrt(20000), rel=1e-6)


def test_chosen_dimensions_are_drawn():
    at = open_page(pe_d_model=128, pe_dims_128=[1, 127])
    traces = figures(at)["pe-curves"]["data"]
    assert [t["meta"] for t in traces] == [1, 127]
    np.testing.assert_allclose(plotly_array(traces[0]["y"]), sinusoidal_encoding(100, 128)[:, 1], atol=1e-6)
    at.multiselect(key="pe_dims_128").set_value([]).run()
    assert "pe-curves" not in figures(at)
    assert any("at least one dimension" in i.value for i in at.info)


def test_similarity_depends_only_on_distance():
    at = open_page(pe_d_model=16, pe_length=40)
    z = plotly_array(figures(at)["pe-similarity"]["data"][0]["z"])
    np.testing.assert_allclose(np.diag(z), 1.0, atol=1e-5)
    np.testing.assert_allclose(z[:-5, :-5], z[5:, 5:], atol=1e-5)  # shifting both positions changes nothing
    lines = [plotly_array(t["y"]) for t in figures(at)["pe-distance"]["data"]]
    assert len(lines) == 3
    np.testing.assert_allclose(lines[1], lines[0][: len(lines[1])], atol=1e-5)
    at.radio(key="pe_similarity").set_value("dot").run()
    z = plotly_array(figures(at)["pe-similarity"]["data"][0]["z"])
    np.testing.assert_allclose(np.diag(z), 16 / 2, atol=1e-4)  # each position's norm² is d_model / 2


def test_large_tables_are_thinned_and_said_so():
    at = open_page(pe_d_model=1024, pe_length=2048)
    figs = figures(at)
    z = plotly_array(figs["pe-heatmap"]["data"][0]["z"])
    assert z.shape == (512, 256)
    assert "every 4th position, every 4th dimension" in figs["pe-heatmap"]["layout"]["title"]["text"]
    assert plotly_array(figs["pe-similarity"]["data"][0]["z"]).shape[0] <= 400
    assert any("every 4th position" in c.value for c in at.caption)


@pytest.mark.parametrize("d_model, length", [(1, 1), (7, 2), (3, 50)])
def test_extreme_controls_still_draw(d_model, length):
    at = open_page(pe_d_model=d_model, pe_length=length)
    z = plotly_array(figures(at)["pe-heatmap"]["data"][0]["z"])
    np.testing.assert_allclose(z.reshape(length, d_model), sinusoidal_encoding(length, d_model), atol=1e-6)


def test_sentence_parts_and_their_sizes():
    text = "the movie was great"
    at = open_page(text)
    assert plotly_array(figures(at)["pe-heatmap"]["data"][0]["z"]).shape == (100, 64)  # the model's d_model
    assert at.number_input(key="pe_d_model").value == 64 and at.number_input(key="pe_base").value == 10000.0
    result = analyze(load_model(ROOT / "assets" / "models" / "imdb-sentiment"), [text])
    figs = figures(at)
    parts = [plotly_array(t["z"]) for t in figs["pe-sentence"]["data"]]
    np.testing.assert_allclose(parts[0], result.token_embeddings[0], atol=1e-5)
    np.testing.assert_allclose(parts[1], result.positional_encodings, atol=1e-5)
    np.testing.assert_allclose(parts[2], result.embeddings[0], atol=1e-5)
    bars = {t["name"]: plotly_array(t["y"]) for t in figs["pe-norms"]["data"]}
    np.testing.assert_allclose(bars["token embedding"], np.linalg.norm(result.token_embeddings[0], axis=-1), rtol=1e-5)
    np.testing.assert_allclose(
        bars["positional encoding"], np.linalg.norm(result.positional_encodings, axis=-1), rtol=1e-5
    )
    assert any("median norm" in m.value and "imdb-sentiment" in m.value for m in at.markdown)


def test_empty_sentence_box_says_what_to_do():
    at = open_page("   ")
    assert any("Type a sentence" in i.value for i in at.info)
    assert "pe-sentence" not in figures(at)


def tiny_model(positional: str) -> LoadedModel:
    torch.manual_seed(0)
    vocab = Vocab(["<unk>", "<pad>", "the", "cat", "sat"])
    cfg = ModelConfig(
        vocab_size=len(vocab), d_model=8, num_heads=2, num_layers=1, d_ff=16, max_len=20, positional=positional
    )
    return LoadedModel(build_model(cfg).eval(), cfg, vocab, name=f"tiny-{positional}")


def test_learned_positions_show_the_learned_table():
    loaded = tiny_model("learned")
    at = open_page("the cat sat", {"upload: tiny-learned": loaded}, model="upload: tiny-learned")
    assert any("learns" in i.value for i in at.info)
    table = loaded.model.encoder.embedding.positions.table.weight.detach().numpy()
    np.testing.assert_allclose(plotly_array(figures(at)["pe-learned"]["data"][0]["z"]), table, atol=1e-6)
    parts = [plotly_array(t["z"]) for t in figures(at)["pe-sentence"]["data"]]
    np.testing.assert_allclose(parts[1], table[:3], atol=1e-6)


def test_no_positional_encoding_is_said():
    at = open_page("the cat sat", {"upload: tiny-none": tiny_model("none")}, model="upload: tiny-none")
    assert any("no positional encoding" in w.value for w in at.warning)
    parts = [plotly_array(t["z"]) for t in figures(at)["pe-sentence"]["data"]]
    assert not parts[1].any()
    assert any("positional part is zero" in m.value for m in at.markdown)


def test_defaults_follow_the_selected_model_and_titles_fit():
    at = open_page(
        "the cat sat", {"upload: tiny-sinusoidal": tiny_model("sinusoidal")}, model="upload: tiny-sinusoidal"
    )
    assert at.number_input(key="pe_d_model").value == 8 and at.number_input(key="pe_length").value == 20
    z = plotly_array(figures(at)["pe-heatmap"]["data"][0]["z"])
    assert z.shape == (20, 8)
    for name in ("pe-curves", "pe-periods", "pe-distance"):  # half-width figures: titles broken into short lines
        title = figures(at)[name]["layout"]["title"]["text"]
        assert max(len(line) for line in title.split("<br>")) <= 45, title
    similarity = figures(at)["pe-similarity"]["layout"]
    assert similarity["xaxis"]["range"] == [-0.5, 19.5] and similarity["yaxis"]["range"] == [19.5, -0.5]
    assert figures(at)["pe-distance"]["layout"]["yaxis"]["range"] == [-1.05, 1.05]


def test_a_model_with_nan_weights_keeps_the_sinusoids_and_says_why_the_rest_is_missing(tiny_bundle):
    from tests.test_page_attention import nan_model, open_with_model

    at = open_with_model(nan_model(tiny_bundle), "positional_encoding", text="the movie was great")
    assert not at.exception, [e.value for e in at.exception]
    assert "pe-heatmap" in figures(at) and "pe-sentence" not in figures(at)
    assert any("NaN or infinite" in e.value for e in at.error)


def test_english_default_shows_the_plain_sum_and_what_the_layernorm_makes_of_it():
    # minilm-sentiment: learned positions, a segment vector and an embedding LayerNorm before the first layer
    text = "I loved this movie!"
    at = open_page(text, model="minilm-sentiment")
    # the sinusoid lab first, whatever the model, and one line on what this one really uses
    assert at.number_input(key="pe_d_model").value == 384 and "pe-curves" in figures(at)
    z = plotly_array(figures(at)["pe-heatmap"]["data"][0]["z"])  # 384 dimensions drawn every 2nd
    np.testing.assert_allclose(z, sinusoidal_encoding(100, 384)[:, ::2], atol=1e-6)
    [line] = [i.value for i in at.info if "selected model" in i.value]
    assert "minilm-sentiment" in line and "**learned** table" in line and "up to 512" in line
    loaded = load_model(ROOT / "assets" / "models" / "minilm-sentiment")
    result = analyze(loaded, [text])
    n = int(result.lengths[0])
    segment = loaded.model.encoder.embedding.token_types.weight[0].detach().numpy()
    figs = figures(at)
    parts = [plotly_array(t["z"]) for t in figs["pe-sentence"]["data"]]
    plain = result.token_embeddings[0, :n] + result.positional_encodings[:n] + segment
    np.testing.assert_allclose(parts[2], plain, atol=1e-5)  # the plain sum, not the LayerNorm's output
    assert np.abs(parts[2]).max() < 4 < np.abs(result.embeddings[0, :n]).max()
    assert "sum (+ segment vector)" in json.dumps(figs["pe-sentence"]["layout"]["annotations"])
    np.testing.assert_allclose(plotly_array(figs["pe-normed"]["data"][0]["z"]), result.embeddings[0, :n], atol=1e-5)
    assert figs["pe-normed"]["data"][0]["zmax"] == pytest.approx(np.abs(result.embeddings[0, :n]).max(), rel=1e-4)
    median = np.median(np.linalg.norm(result.embeddings[0, :n], axis=-1))
    assert any(f"median size **{median:.2f}**" in c.value for c in at.caption)
    assert any("segment vector" in c.value for c in at.caption)
    bars = {t["name"]: plotly_array(t["y"]) for t in figs["pe-norms"]["data"]}
    np.testing.assert_allclose(bars["sum"], np.linalg.norm(plain, axis=-1), rtol=1e-4)
    assert "after LayerNorm" in bars
    # the learned table on its own scale: 99 % of its values span the colours (one outlier reaches 1.9)
    table = plotly_array(figs["pe-learned"]["data"][0]["z"])
    limit = figs["pe-learned"]["data"][0]["zmax"]
    assert limit < 0.2 < np.abs(table).max() and (np.abs(table) <= limit).mean() >= 0.98
    assert "colours ±0.0648 hold 99% of the values" in figs["pe-learned"]["layout"]["title"]["text"]


def test_korean_default_sum_is_the_first_layers_input():
    # nsmc-sentiment: sinusoids, no LayerNorm before the first layer: the sum is what the layer reads
    text = "정말 좋았어요!"
    at = open_app("positional_encoding", by_link=True, text=text, lang="ko")
    result = analyze(load_model(ROOT / "assets" / "models" / "nsmc-sentiment"), [text])
    n = int(result.lengths[0])
    figs = figures(at)
    assert "pe-normed" not in figs
    assert any("nsmc-sentiment" in i.value and "바로 이 사인·코사인을 더합니다" in i.value for i in at.info)
    parts = [plotly_array(t["z"]) for t in figs["pe-sentence"]["data"]]
    np.testing.assert_allclose(parts[2], result.embeddings[0, :n], atol=1e-4)
    assert "= 합 (인코더의 입력)" in json.dumps(figs["pe-sentence"]["layout"]["annotations"], ensure_ascii=False)
    assert len(figs["pe-norms"]["data"]) == 3
