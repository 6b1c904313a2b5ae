"""Trainings a teacher can run in front of a class: the settings and how long each trains."""

from __future__ import annotations

from dataclasses import dataclass

from .trainer import LabSettings


@dataclass(frozen=True)
class Preset:
    """``name`` is the key of its title and text in the app's catalogues (``train.preset_<name>``);
    ``seconds`` its training time (CPU seconds of the training); ``watch_at``: about when (CPU seconds of
    training, one thread) the change it shows comes, as bench/bench_lab.py measured it at seed 0, or None
    when the point is that it never comes."""

    name: str
    settings: LabSettings
    seconds: float
    watch_at: float | None = None


PRESETS = {
    # a small learning rate on purpose: at 2e-3 reverse was solved in 2 s of training and nothing changed for
    # the rest of the minute; at 7e-5 the accuracy jumps from near chance to 1 at ~22-24 s (bench/bench_lab.py)
    "reverse": Preset("reverse", LabSettings(task="reverse", length=12, symbols=16, lr=7e-5), 45.0, 23.0),
    # learned positions and an output layer of its own: with the output tied to the embedding (or with rotary
    # positions) the task is solved by a circuit that does not look one token back, and no head reaches the
    # atlas's induction score of 0.4 (measured: bench/bench_lab_tying.py, README)
    "induction": Preset(
        "induction",
        LabSettings(task="induction", length=8, symbols=60, batch=32, lr=3e-3, positional="learned"),
        90.0,
        40.0,
    ),
    # the reverse preset without any positional encoding: the model cannot tell where a token is
    "positions": Preset(
        "positions", LabSettings(task="reverse", length=12, symbols=16, lr=7e-5, positional="none"), 45.0
    ),
}


def preset_of(settings: LabSettings) -> Preset | None:
    """The preset whose settings ``settings`` are, whatever the seed; None for settings of one's own."""
    return next((p for p in PRESETS.values() if p.settings.replace(seed=settings.seed) == settings), None)
