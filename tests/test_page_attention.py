"""AppTest of the Attention page: the figures show the analysis' numbers for the chosen view."""

from __future__ import annotations

import dataclasses
import functools
import io
import json
from unittest import mock

import numpy as np
import pytest
from streamlit.runtime.scriptrunner_utils.script_requests import RerunData
from streamlit.testing.v1 import local_script_runner

from transformer import AnalysisResult, analyze, load_model
from transformer.analysis.rollout import attention_rollout
from ui.figures.common import token_labels

from .app_helpers import MODEL, array, figures, open_app, record_downloads, texts

SENTENCE = "the movie was not good , the movie was bad"


@pytest.fixture(scope="module")
def loaded():
    return load_model(MODEL)


def expected(loaded, at, text: str):
    """The analysis the page should be showing for ``text`` (same model, same maximum length)."""
    return analyze(loaded, [text], at.session_state["selection"].max_len)


def heatmap(at) -> tuple[np.ndarray, list[str], list[str], str]:
    spec = figures(at)["attention-heatmap"]
    trace = spec["data"][0]
    return array(trace["z"]), trace["y"], trace["x"], spec["layout"]["title"]["text"]


def fragment_run(at, widget_states=None) -> None:
    """Rerun only the page's fragment, as the browser asks when a widget inside it changes (AppTest
    itself always reruns the whole script): the sidebar and the rest of the page do not run."""
    (fragment_id,) = at._fragment_storage.resolve_target("attention_view")  # the page's @st.fragment key
    states = widget_states if widget_states is not None else at._tree.get_widget_states()
    asked = functools.partial(RerunData, fragment_id_queue=[fragment_id])
    with mock.patch.object(local_script_runner, "RerunData", asked):
        at._run(states)
    assert not at.exception, [e.value for e in at.exception]


def grid_spec(at) -> dict:
    return figures(at)["attention-grid"]


def outlined_head(grid: dict) -> list[int]:
    """[layer, head], 0-based, of the one click target (thumbnail centre) inside the grid's outline."""
    (outline,) = grid["layout"]["shapes"]
    targets = grid["data"][-1]
    (inside,) = [
        data
        for x, y, data in zip(targets["x"], targets["y"], targets["customdata"])
        if outline["x0"] < x < outline["x1"] and outline["y0"] < y < outline["y1"]
    ]
    return inside


def test_default_view_shows_heatmap_grid_and_lines():
    at = open_app("attention", text=SENTENCE)
    assert set(figures(at)) == {"attention-heatmap", "attention-grid", "attention-lines"}
    z, rows, cols, title = heatmap(at)
    assert title == "Layer 1, head 1"
    assert rows == cols == token_labels(SENTENCE.split())  # repeated 'the' stay separate rows
    assert z.shape == (10, 10) and z.dtype == np.float32
    assert len(at.get("download_button")) == 3  # CSV, NPZ, JSON


def test_layer_and_head_from_the_url_select_those_weights(loaded):
    at = open_app("attention", text=SENTENCE, layer="2", head="3")
    z, _, _, title = heatmap(at)
    assert title == "Layer 2, head 3"
    assert at.selectbox(key="layer").value == 2 and at.selectbox(key="head").value == 3
    weights = expected(loaded, at, SENTENCE).attention_for(0)
    np.testing.assert_allclose(z, weights[1, 2], atol=1e-6)
    assert not np.allclose(z, weights[0, 0])


def test_changing_sentence_layer_and_head_changes_the_heatmap(loaded):
    at = open_app("attention", text=SENTENCE)
    at.text_area(key="text").input("a great film").run()
    z, rows, _, _ = heatmap(at)
    assert rows == token_labels(["a", "great", "film"]) and z.shape == (3, 3)
    at.selectbox(key="layer").select(2).run()
    at.selectbox(key="head").select(4).run()
    z, _, _, title = heatmap(at)
    assert title == "Layer 2, head 4"
    np.testing.assert_allclose(z, expected(loaded, at, "a great film").attention_for(0)[1, 3], atol=1e-6)
    assert outlined_head(figures(at)["attention-grid"]) == [1, 3]  # the outline sits on layer 2, head 4


def test_layer_and_head_rerun_only_the_view_fragment(loaded, monkeypatch):
    import ui.models
    from ui.figures import attention as figs

    at = open_app("attention", text=SENTENCE)
    thumbnails = [trace.get("source") for trace in grid_spec(at)["data"]]
    calls = {"analysis": 0, "grid": 0}

    def counted(name, function):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(ui.models, "analyze_encoded", counted("analysis", ui.models.analyze_encoded))
    monkeypatch.setattr(figs, "head_grid", counted("grid", figs.head_grid))
    at.selectbox(key="layer").set_value(2)
    fragment_run(at)
    at.selectbox(key="head").set_value(3)
    fragment_run(at)
    assert not at.sidebar and not at.get("text_area")  # neither the sidebar nor the sentence box ran
    z, rows, _, title = heatmap(at)
    assert title == "Layer 2, head 3" and rows == token_labels(SENTENCE.split())
    weights = expected(loaded, at, SENTENCE).attention_for(0)
    np.testing.assert_allclose(z, weights[1, 2], atol=1e-6)
    lines = figures(at)["attention-lines"]
    assert lines["layout"]["title"]["text"] == "Layer 2, head 3"
    grid = grid_spec(at)
    assert [trace.get("source") for trace in grid["data"]] == thumbnails  # the thumbnails are kept
    assert outlined_head(grid) == [1, 2]  # layer 2, head 3
    assert calls == {"analysis": 0, "grid": 0}  # no analysis run (the cache has it), no grid rebuilt
    at.segmented_control(key="view").set_value("mean")
    fragment_run(at)
    z, _, _, title = heatmap(at)
    np.testing.assert_allclose(z, weights[1].mean(axis=0), atol=1e-6)
    assert "shapes" not in grid_spec(at)["layout"] or not grid_spec(at)["layout"]["shapes"]


def test_a_click_on_a_thumbnail_opens_that_head_and_the_address_follows(loaded):
    at = open_app("attention", text=SENTENCE)
    chart = next(el for el in at.get("plotly_chart") if json.loads(el.proto.spec)["layout"]["meta"] == "attention-grid")
    states = at._tree.get_widget_states()
    click = states.widgets.add()
    click.id = chart.proto.id  # what the browser sends for a click on layer 2, head 4 (0-based [1, 3])
    click.string_value = json.dumps({"selection": {"points": [{"customdata": [1, 3]}], "point_indices": []}})
    fragment_run(at, states)
    z, _, _, title = heatmap(at)
    assert title == "Layer 2, head 4"
    np.testing.assert_allclose(z, expected(loaded, at, SENTENCE).attention_for(0)[1, 3], atol=1e-6)
    assert at.query_params["layer"] == "2" and at.query_params["head"] == "4"  # a shared link opens this head
    assert at.selectbox(key="layer").value == 2 and at.selectbox(key="head").value == 4
    at.selectbox(key="head").set_value(1)
    fragment_run(at)
    assert heatmap(at)[3] == "Layer 2, head 1"


def test_mean_over_heads_and_rollout(loaded):
    at = open_app("attention", text=SENTENCE, layer="2", view="Mean over heads")
    weights = expected(loaded, at, SENTENCE).attention_for(0)
    z, _, _, title = heatmap(at)
    assert "mean over 4 heads" in title
    np.testing.assert_allclose(z, weights[1].mean(axis=0), atol=1e-6)
    assert at.selectbox(key="head").disabled
    at.segmented_control(key="view").set_value("rollout").run()
    z, _, _, title = heatmap(at)
    assert title == "Rollout through layers 1–2"
    np.testing.assert_allclose(z, attention_rollout(weights)[1], atol=1e-5)
    np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-5)


def test_several_sentences_pick_one(loaded):
    at = open_app("attention", text="i loved it\nthe plot was boring and slow")
    at.selectbox(key="sentence").select(1).run()
    _, rows, _, _ = heatmap(at)
    assert rows == token_labels("the plot was boring and slow".split())


def test_long_input_is_shown_through_a_window(loaded):
    words = loaded.vocab.itos[10:210]
    text = " ".join(words)
    at = open_app("attention", text=text, max_len="512")
    z, rows, cols, _ = heatmap(at)
    assert z.shape == (64, 64) and rows[0] == token_labels(words[:1])[0]
    at.slider(key="window").set_value((100, 129)).run()
    z, rows, cols, _ = heatmap(at)
    assert z.shape == (30, 30) and rows == token_labels(words[100:130], 100) == cols
    np.testing.assert_allclose(z, expected(loaded, at, text).attention_for(0)[0, 0, 100:130, 100:130], atol=1e-6)
    at.toggle(key="all_keys").set_value(True).run()
    z, _, cols, _ = heatmap(at)
    assert z.shape == (30, 200) and cols == token_labels(words)
    lines = figures(at)["attention-lines"]
    assert lines["data"][-2]["text"] == token_labels(words[100:130], 100)


def test_threshold_filters_lines():
    at = open_app("attention", text=SENTENCE)

    def segments() -> int:
        traces = figures(at)["attention-lines"]["data"][:-2]  # the last two traces are the token columns
        return sum(int((array(t["x"]) == 0.0).sum()) for t in traces)

    assert segments() == 3 * 10  # by default each query's three strongest keys
    at.select_slider(key="top_k").set_value(0).run()  # every key above the threshold
    at.slider(key="threshold").set_value(0.0).run()
    assert segments() == 10 * 10
    at.slider(key="threshold").set_value(0.2).run()
    z, _, _, _ = heatmap(at)
    assert segments() == int((z >= 0.2).sum()) < 10 * 10


@pytest.mark.parametrize(
    "text, message",
    [("", "Type a sentence"), ("   \n  \t ", "Type a sentence"), ("!!!", None), ("😀 🎬", None)],
)
def test_empty_and_odd_inputs_give_a_message_or_a_view(text, message):
    at = open_app("attention", text="placeholder")
    at.text_area(key="text").input(text).run()
    assert not at.exception
    if message:
        assert any(message in m for m in texts(at.info))
        assert "attention-heatmap" not in figures(at)
    else:
        assert "attention-heatmap" in figures(at)


def test_html_and_scripts_are_shown_as_text():
    at = open_app("attention", text="<script>alert(1)</script> <b>bold</b>")
    _, rows, _, _ = heatmap(at)
    assert all("<" not in label for label in rows)
    assert any("&lt;" in label for label in rows)


def test_ten_thousand_words_are_truncated_with_a_warning(loaded):
    kept = loaded.config.default_max_tokens  # the sidebar's default maximum length
    at = open_app("attention", text=" ".join(["good"] * 10_000))
    assert any(f"Only the first {kept:,} of 10,000 tokens" in w for w in texts(at.warning))
    z, _, _, _ = heatmap(at)
    assert z.shape == (64, 64)  # more than 64 tokens are shown through the 64-token window


def test_a_shorter_input_resets_the_window_and_the_chosen_sentence(loaded):
    words = loaded.vocab.itos[10:210]
    at = open_app("attention", text=" ".join(words), max_len="512")
    at.slider(key="window").set_value((150, 199)).run()
    at.text_area(key="text").input(" ".join(words[:100])).run()
    assert not at.exception
    z, rows, _, _ = heatmap(at)
    assert z.shape == (64, 64) and rows[0] == token_labels(words[:1])[0]
    at.text_area(key="text").input("a film\nthe plot\nit was bad").run()
    at.selectbox(key="sentence").select(2).run()
    assert heatmap(at)[1] == token_labels(["it", "was", "bad"])
    at.text_area(key="text").input("a film\nthe plot").run()
    assert not at.exception
    assert heatmap(at)[1] in (token_labels(["a", "film"]), token_labels(["the", "plot"]))


# Models made in the tests, put in the session as an upload would be.
def open_with_model(loaded, page: str, **query: str):
    """The app on ``pages/<page>.py`` with ``loaded`` as this session's only upload, selected."""
    return open_app(page, uploads={"upload: test": loaded}, chosen="upload: test", **query)


def nan_model(tiny_bundle, layer: int | None = None):
    """The tiny classifier with NaN weights: everywhere, or in one encoder layer's query projection."""
    import torch

    loaded = load_model(tiny_bundle)
    with torch.no_grad():
        if layer is None:
            for p in loaded.model.parameters():
                p.fill_(float("nan"))
        else:
            loaded.model.encoder.layers[layer].self_attn.w_q.weight.fill_(float("nan"))
    return loaded


def seq2seq_model(tmp_path, tiny_vocab):
    """A tiny random encoder-decoder (two encoder and two decoder layers, 4 heads)."""
    import torch

    from transformer import save_bundle
    from transformer.bundle import load_bundle
    from transformer.core.model import build_model

    from .conftest import tiny_config

    torch.manual_seed(0)
    config = tiny_config(
        kind="encoder-decoder",
        num_decoder_layers=2,
        target_vocab_size=len(tiny_vocab),
        vocab_size=len(tiny_vocab),
        pad_id=tiny_vocab.pad_id,
        target_pad_id=tiny_vocab.pad_id,
        bos_id=2,
        eos_id=3,
    )
    folder = save_bundle(tmp_path / "s2s", build_model(config).eval(), config, tiny_vocab, target_vocab=tiny_vocab)
    return load_bundle(folder)


def test_a_model_with_nan_weights_gets_a_message_not_an_exception(tiny_bundle):
    at = open_with_model(nan_model(tiny_bundle), "attention", text="the movie was great")
    assert not at.exception, [e.value for e in at.exception]
    assert any("NaN or infinite" in e for e in texts(at.error))
    assert any("Tokens the model saw" in m and "movie" in m for m in texts(at.markdown))
    assert "attention-heatmap" not in figures(at)


def test_nan_in_one_layer_still_shows_the_finite_one(tiny_bundle):
    at = open_with_model(nan_model(tiny_bundle, layer=1), "attention", text="the movie was great")
    assert not at.exception, [e.value for e in at.exception]
    assert any("NaN or infinite" in e for e in texts(at.error))
    z, _, _, title = heatmap(at)  # layer 1 is fine
    assert title == "Layer 1, head 1" and np.isfinite(z).all()
    assert any("L2 H1" in c for c in texts(at.caption))  # the grid says which heads are empty
    at.selectbox(key="layer").select(2).run()
    assert not at.exception and "attention-heatmap" not in figures(at)
    assert any("Layer 2, head 1" in w for w in texts(at.warning))


@pytest.fixture
def file_names(monkeypatch):
    """The file names given to every download button drawn (AppTest has no runtime to keep them)."""
    from streamlit.delta_generator import DeltaGenerator

    names: list[str] = []
    original = DeltaGenerator.download_button

    def recording(self, *args, **kwargs):
        names.append(kwargs.get("file_name"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", recording)
    return names


def test_encoder_decoder_parts(tmp_path, tiny_vocab, file_names):
    loaded = seq2seq_model(tmp_path, tiny_vocab)
    text = "the movie was great"
    at = open_with_model(loaded, "attention", text=text)
    assert not at.exception, [e.value for e in at.exception]
    result = analyze(loaded, [text], at.session_state["selection"].max_len)
    source, target = result.tokens[0], result.decoder_tokens[0]
    n, m = len(source), len(target)
    z, rows, cols, _ = heatmap(at)  # encoder self first
    np.testing.assert_allclose(z, result.attention_for(0)[0, 0], atol=1e-6)

    at.segmented_control(key="part").set_value("decoder").run()
    z, rows, cols, _ = heatmap(at)
    assert rows == cols == token_labels(target) and z.shape == (m, m)
    assert (np.triu(z, k=1) == 0).all()  # the look-ahead mask: nothing above the diagonal
    np.testing.assert_allclose(z, result.decoder_self_attention[0, 0, 0, :m, :m], atol=1e-6)
    assert len(figures(at)["attention-grid"]["data"][-1]["customdata"]) == 2 * 4  # a click target per head

    at.segmented_control(key="part").set_value("cross").run()
    at.selectbox(key="layer").select(2).run()
    at.selectbox(key="head").select(3).run()
    z, rows, cols, title = heatmap(at)
    assert rows == token_labels(target) and cols == token_labels(source) and title == "Layer 2, head 3"
    np.testing.assert_allclose(z, result.cross_attention[0, 1, 2, :m, :n], atol=1e-6)
    np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-5)

    at.segmented_control(key="part").set_value("all").run()
    z, rows, _, _ = heatmap(at)
    assert z.shape == (n + m, n + m) and len(rows) == n + m
    np.testing.assert_array_equal(z[:n, n:], 0.0)  # the source never looks at the target
    np.testing.assert_allclose(z[n:, :n], result.cross_attention[0, 1, 2, :m, :n], atol=1e-6)
    assert "attention-all-L2-H3-the-movie-was-great.csv" in file_names, file_names


def test_download_names_say_layer_head_and_sentence(file_names):
    at = open_app("attention", text=SENTENCE, layer="2", head="3")
    assert [b.label for b in at.get("download_button")] == ["CSV", "NPZ", "JSON"]  # short labels, never cut
    stem = "attention-encoder-L2-H3-the-movie-was-not-good"
    assert sorted(set(file_names)) == [f"{stem}.csv", f"{stem}.json", f"{stem}.npz"]


def test_korean_page_and_presenter_fonts():
    at = open_app("attention", text=SENTENCE, lang="ko", present="1", model="imdb-sentiment")  # an English sentence
    z, _, _, title = heatmap(at)
    assert title == "레이어 1, 헤드 1" and z.shape == (10, 10)
    layout = figures(at)["attention-heatmap"]["layout"]
    assert layout["xaxis"]["title"]["text"] == "키 (열)" and layout["yaxis"]["title"]["text"] == "쿼리 (행)"
    assert layout["xaxis"]["tickfont"]["size"] >= 22 and layout["yaxis"]["tickfont"]["color"] == "#111111"


def test_figures_are_shown_without_streamlits_theme():
    at = open_app("attention", text=SENTENCE)
    assert all(el.proto.theme == "" for el in at.get("plotly_chart"))


def test_many_long_lines_run_only_the_chosen_sentence():
    review = " ".join(["the acting was wonderful but the plot was thin ."] * 100)  # ~1,000 tokens a line
    at = open_app("attention", text="\n".join(f"{k} {review}" for k in range(6)))
    assert not at.error and not at.exception
    heat = figures(at)["attention-heatmap"]
    assert heat["data"][0]["y"][0].endswith(":0")  # the first line's first token
    at.selectbox(key="sentence").set_value(4).run()
    assert not at.error and figures(at)["attention-heatmap"]["data"][0]["y"][0].endswith(":4")


def arrays_in(value, depth: int = 4) -> int:
    """Bytes of numpy arrays reachable from ``value`` through containers and dataclass fields."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if depth == 0:
        return 0
    if isinstance(value, dict):
        return sum(arrays_in(v, depth - 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(arrays_in(v, depth - 1) for v in value)
    if isinstance(value, functools.partial):
        return arrays_in(value.args, depth - 1) + arrays_in(value.keywords, depth - 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(arrays_in(getattr(value, f.name), depth - 1) for f in dataclasses.fields(value))
    return 0


def test_the_view_fragment_keeps_no_weights_per_session():
    """Streamlit keeps a fragment's arguments for its reruns in every session: they must not hold
    the weights (a class of long reviews would pin ~67 MB per session)."""
    at = open_app("attention", text=" ".join(["the film was good"] * 50))
    (fragment_id,) = at._fragment_storage.resolve_target("attention_view")
    stored = at._fragment_storage.lookup(fragment_id)
    cells = [cell.cell_contents for cell in stored.__closure__ or ()]
    assert any(isinstance(c, tuple) and any(isinstance(a, str) and "film" in a for a in c) for c in cells)
    assert sum(arrays_in(c) for c in cells if isinstance(c, (tuple, dict))) == 0


def reachable_arrays(make) -> int:
    """Bytes of numpy arrays (or analyses) a download's function keeps alive through its closure."""
    if isinstance(make, functools.partial):
        return arrays_in(make.args) + arrays_in(make.keywords)
    total = 0
    for cell in make.__closure__ or ():
        value = cell.cell_contents
        if callable(value) and getattr(value, "__closure__", None):
            total += reachable_arrays(value)
        elif isinstance(value, AnalysisResult):
            total += 1 << 30
        else:
            total += arrays_in(value)
    return total


def test_downloads_keep_no_analysis_and_give_the_models_numbers(loaded, monkeypatch):
    """Streamlit keeps each download's function in the session until the next run: it must hold no
    analysis (a window's CSV holds only its own copy), and still give the right numbers when clicked."""
    made = record_downloads(monkeypatch)
    at = open_app("attention", text=SENTENCE)
    assert sorted(made) == ["csv", "json", "npz"]
    assert reachable_arrays(made["npz"]) == 0 and reachable_arrays(made["json"]) == 0
    assert reachable_arrays(made["csv"]) <= len(SENTENCE.split()) ** 2 * 4  # the window's copy only
    with np.load(io.BytesIO(made["npz"]())) as npz:
        np.testing.assert_allclose(npz["attention"], expected(loaded, at, SENTENCE).attention_for(0), atol=1e-6)
