"""The rotary section of the Positional encoding page: its numbers are the core's rotated q·k, they depend
on the distance alone, and the page shows them in English and Korean."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.app_helpers import array, figures, open_app
from transformer import ModelConfig, build_model
from transformer.bundle import LoadedModel
from transformer.core.positional import RotaryEmbedding
from transformer.core.tokenizer import Vocab
from ui.figures import rotary

SETTINGS = [(64, 10000.0, "halves"), (64, 10000.0, "interleaved"), (4, 10000.0, "halves"), (32, 500000.0, "halves")]


def core_scores(dim: int, base: float, style: str, positions: int = rotary.POSITIONS) -> np.ndarray:
    """q_m·k_n from the core's rotary module, one position at a time (its ``start`` argument), in float64 dots."""
    rope = RotaryEmbedding(dim, base, style)
    q = torch.from_numpy(rotary.example_query(rope.inv_freq.double().numpy(), style)).view(1, 1, 1, dim)
    k = rope(q, start=rotary.LAG)
    qs = np.stack([rope(q, start=m)[0, 0, 0].double().numpy() for m in range(positions)])
    ks = np.stack([rope(k, start=n)[0, 0, 0].double().numpy() for n in range(positions)])
    return qs @ ks.T


@pytest.mark.parametrize(("dim", "base", "style"), SETTINGS)
def test_scores_are_the_cores_rotated_dot_products_and_depend_on_distance_only(dim, base, style):
    demo = rotary.rotary_demo(dim, base, style)
    np.testing.assert_allclose(demo.scores, core_scores(dim, base, style), atol=1e-5)
    shown = array(rotary.score_heatmap(demo.scores, rotary.distance_marks(2)).to_plotly_json()["data"][0]["z"])
    np.testing.assert_array_equal(shown, demo.scores)
    for shift in (1, 5, 37):  # moving query and key by the same amount changes nothing
        np.testing.assert_allclose(shown[shift:, shift:], shown[:-shift, :-shift], atol=1e-5)
    assert abs(shown[5, 3] - shown[42, 40]) < 1e-5
    assert np.allclose(np.linalg.norm(demo.queries, axis=1), 1.0, atol=1e-5)  # turning keeps the length


def test_the_example_key_is_a_previous_token_key():
    demo = rotary.rotary_demo(64, 10000.0, "halves")
    best = demo.scores.argmax(axis=1)  # for each query position, the key position it scores highest
    np.testing.assert_array_equal(best[1:], np.arange(rotary.POSITIONS - 1))
    np.testing.assert_allclose(np.diag(demo.scores, -1), 1.0, atol=1e-5)
    pairing = rotary.rotary_demo(64, 10000.0, "interleaved")  # the pairing moves dimensions, not scores
    np.testing.assert_allclose(pairing.scores, demo.scores, atol=1e-5)


def test_the_score_against_distance_lines_coincide_and_mark_3_to_5_and_40_to_42():
    demo = rotary.rotary_demo(64, 10000.0, "halves")
    marks = rotary.distance_marks(5 - 3)
    assert marks == [(5, 3), (42, 40)]
    fig = rotary.score_by_distance(demo.scores, marks).to_plotly_json()
    first, second, dots = fig["data"]
    assert (first["meta"], second["meta"]) == rotary.STARTS
    distances = array(first["x"])
    assert distances[0] == -3 and distances[-1] == rotary.POSITIONS - 1 - 40
    np.testing.assert_allclose(array(first["y"]), array(second["y"]), atol=1e-5)
    np.testing.assert_allclose(array(first["y"]), demo.scores[3 + distances, 3], atol=0)
    assert list(dots["x"]) == [2, 2] and dots["text"] == ["3→5", "40→42"]
    assert dots["y"][0] == pytest.approx(dots["y"][1], abs=1e-5)
    assert rotary.distance_marks(-10) == [(0, 3), (37, 40)]  # kept where both lines exist
    assert rotary.distance_marks(60) == [(26, 3), (63, 40)]


def test_the_plane_draws_the_pairs_rotated_coordinates():
    demo = rotary.rotary_demo(8, 10000.0, "halves")
    fig = rotary.rotation_plane(demo, 1, 5, 3, "en").to_plotly_json()
    path, query, key = fig["data"]
    assert rotary.pair_dims(1, 8, "halves") == (1, 5) and rotary.pair_dims(1, 8, "interleaved") == (2, 3)
    np.testing.assert_allclose(array(path["x"]), demo.queries[:, 1])
    np.testing.assert_allclose(array(path["y"]), demo.queries[:, 5])
    assert list(query["x"]) == pytest.approx([0.0, demo.queries[5, 1]])
    assert list(key["y"]) == pytest.approx([0.0, demo.keys[3, 5]])
    assert query["name"] == "query at 5" and key["name"] == "key at 3"
    # the same gap anywhere: the angle between the arrows is (5 - 3 - LAG) steps of this pair
    step = np.degrees(demo.step[1])
    assert rotary.plane_angle(demo, 1, 5, 3) == pytest.approx(step, abs=1e-3)
    assert rotary.plane_angle(demo, 1, 42, 40) == pytest.approx(step, abs=1e-3)
    assert "dimensions 1 and 5" in fig["layout"]["title"]["text"]
    assert fig["layout"]["title"]["font"]["size"] >= 20 and fig["layout"]["xaxis"]["tickfont"]["size"] >= 16


def open_page(lang: str = "en", uploads: dict | None = None, **state) -> AppTest:
    return open_app(
        "positional_encoding", state=state, uploads=uploads, by_link=True, timeout=300, text="the cat sat", lang=lang
    )


def rotary_texts(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_page_in_english_follows_the_sliders():
    at = open_page("en")
    assert "Rotary positions (RoPE): the score depends on the distance" in [h.value for h in at.header]
    figs = figures(at)
    np.testing.assert_allclose(
        array(figs["rope-scores"]["data"][0]["z"]), core_scores(64, 10000.0, "halves"), atol=1e-5
    )
    assert array(figs["rope-distance"]["data"][2]["x"]).tolist() == [2, 2]
    text = rotary_texts(at)
    assert "The query at 5 and the key at 3 are **57.3°** apart" in text
    score = re.search(r"q·k = \*\*(-?[0-9.]+)\*\*", text).group(1)
    assert "query at 5 with the key at 3 and the query at 42 with the key at 40" in text
    at.slider(key="rope_query").set_value(42).run()
    at.slider(key="rope_key").set_value(40).run()
    text = rotary_texts(at)
    assert "The query at 42 and the key at 40 are **57.3°** apart" in text
    assert f"q·k = **{score}**" in text  # the same score 37 positions further on
    at.slider(key="rope_pair_64").set_value(4).run()
    plane = figures(at)["rope-plane"]
    assert "Pair 4, dimensions 4 and 36" in plane["layout"]["title"]["text"]
    assert f"q·k = **{score}**" in rotary_texts(at)  # the pair drawn does not change the score
    assert any("as in Llama" in c.value for c in at.caption)


def test_page_in_korean():
    at = open_page("ko", rope_query=6, rope_key=4)
    assert "회전 위치 임베딩(RoPE): 점수는 거리에만 달려 있습니다" in [h.value for h in at.header]
    figs = figures(at)
    assert figs["rope-scores"]["layout"]["xaxis"]["title"]["text"] == "키 위치"
    assert figs["rope-plane"]["layout"]["title"]["text"].startswith("쌍 0, 차원 0과 32: 위치마다 57.3°")
    assert figs["rope-distance"]["data"][0]["name"] == "위치 3의 키"
    text = rotary_texts(at)
    assert "위치 6의 쿼리와 위치 4의 키는 이 평면에서 **57.3°** 떨어져" in text
    assert "위치 5의 쿼리와 위치 3의 키, 위치 42의 쿼리와 위치 40의 키는 점수가 같아서" in text
    assert any("차원 i와 i + 32가 쌍을 이루는" in c.value for c in at.caption)


def tiny_rotary_model(style: str, fraction: float = 1.0) -> LoadedModel:
    torch.manual_seed(0)
    vocab = Vocab(["<unk>", "<pad>", "the", "cat", "sat"])
    cfg = ModelConfig(
        vocab_size=len(vocab),
        d_model=16,
        num_heads=2,
        num_layers=1,
        d_ff=16,
        max_len=20,
        positional="rotary",
        rotary_style=style,
        pe_base=500.0,
        rotary_fraction=fraction,
    )
    return LoadedModel(build_model(cfg).eval(), cfg, vocab, name="tiny-rotary")


def test_a_rotary_model_shows_its_own_settings():
    loaded = tiny_rotary_model("interleaved")
    at = open_page("en", {"upload: tiny-rotary": loaded}, model="upload: tiny-rotary")
    assert any("The selected model uses rotary positions: 8 rotated dimensions per head, base 500" in c.value
               for c in at.caption)  # fmt: skip
    rope = loaded.model.encoder.layers[0].self_attn.rotary
    assert (rope.rotary_dim, rope.style) == (8, "interleaved")
    np.testing.assert_allclose(
        array(figures(at)["rope-scores"]["data"][0]["z"]), core_scores(8, 500.0, "interleaved"), atol=1e-5
    )
    assert at.slider(key="rope_pair_8").max == 3
    assert any("turns its queries and keys by their position (rotary, 8 of 8" in m.value for m in at.markdown)


def test_a_head_that_rotates_one_pair_only_draws_it_without_a_pair_slider():
    loaded = tiny_rotary_model("halves", fraction=0.25)  # 2 of each head's 8 dimensions rotate
    at = open_page("en", {"upload: tiny-rotary": loaded}, model="upload: tiny-rotary")
    assert not [s for s in at.slider if s.key.startswith("rope_pair")]
    assert "Pair 0, dimensions 0 and 1" in figures(at)["rope-plane"]["layout"]["title"]["text"]
    np.testing.assert_allclose(
        array(figures(at)["rope-scores"]["data"][0]["z"]), core_scores(2, 500.0, "halves"), atol=1e-5
    )
