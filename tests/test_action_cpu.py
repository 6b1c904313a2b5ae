"""What the server CPU cuts of bench/bench_action_cpu.py must not change: the pages show the same, and
garbage is still collected.

- Streamlit's full collection after every run is off once the app has started (``streamlit_app.py``);
  Python's own generational collector still runs.
- The Playground's probability bars are kept per session and per font scale: presenter mode re-sizes
  a figure's fonts in place, so leaving it must show the figure as it was before."""

from __future__ import annotations

import gc

import pyarrow as pa
from streamlit import config

from .app_helpers import figures, open_app


def test_the_full_collection_after_every_run_is_off_and_python_still_collects():
    at = open_app("attention", text="the film was good")
    assert figures(at)["attention-heatmap"]["data"][0]["y"]  # the page ran
    assert config.get_option("runner.postScriptGC") is False
    assert gc.isenabled()  # reference cycles are still freed, by Python's own collector
    assert gc.get_freeze_count() > 0  # the start-up objects, frozen before it was turned off


def bar_fonts(at) -> tuple[float, float]:
    layout = figures(at)["probability-bars"]["layout"]
    return layout["font"]["size"], layout["xaxis"]["tickfont"]["size"]


def test_probability_bars_after_presenter_mode_have_their_own_fonts_again():
    text = "a sentence for the presenter font test, 5121"
    at = open_app("playground", text=text)
    plain = bar_fonts(at)
    at.query_params["present"] = "1"
    at.run()
    large = bar_fonts(at)
    assert large[0] > plain[0] and large[1] > plain[1]
    at.toggle(key="present_toggle").set_value(False).run()
    assert not at.exception
    assert bar_fonts(at) == plain  # the same inputs, not the figure presenter mode re-sized
    at.query_params["present"] = "1"
    at.run()
    assert bar_fonts(at) == large  # and presenter mode again: re-sized once, not twice


def shown_cells(at) -> list[dict]:
    """What the browser writes in each cell of the Playground's table: the styler's display value for
    text columns and numbers without a format (Streamlit's frontend ignores it for formatted numbers
    and progress bars), else the value itself."""
    element = at.dataframe[0]
    frame = element.value
    display = pa.ipc.open_stream(element.proto.arrow_data.styler.display_values).read_all().to_pylist()
    formatted = {"probability", "raw"}  # ProgressColumn and NumberColumn(format="percent")
    return [
        {col: (frame.iloc[row][col] if col in formatted else display[row][col]) for col in frame.columns}
        for row in range(len(frame))
    ]


def test_the_playground_table_shows_each_cells_own_text_and_colours_only_predictions():
    lines = ["what a great film", "terrible boring mess", "zzqx vvbn"]  # the last: no known word
    at = open_app("playground", text="\n".join(lines))
    frame = at.dataframe[0].value
    for row, cells in enumerate(shown_cells(at)):
        assert cells["sentence"] == frame.iloc[row]["sentence"]
        assert cells["prediction"] == frame.iloc[row]["prediction"]
        for col in ("tokens", "unknown", "cut off"):
            assert cells[col] == str(frame.iloc[row][col])
    styles = at.dataframe[0].proto.arrow_data.styler.styles
    assert styles.count("color:") == 2  # the two readable predictions; "—" for the unreadable line is plain
    assert frame.iloc[2]["prediction"] == "—"
