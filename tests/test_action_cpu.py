"""What the server CPU cuts of bench/bench_action_cpu.py must not change: the pages show the same, and
garbage is still collected.

- Streamlit's full collection after every run is off once the app has started (``streamlit_app.py``);
  Python's own generational collector still runs.
- The Playground's probability bars are kept per session and per font scale: presenter mode re-sizes
  a figure's fonts in place, so leaving it must show the figure as it was before."""

from __future__ import annotations

import gc

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
