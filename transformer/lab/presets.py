"""Trainings a teacher can run in front of a class: the settings and how long each trains."""

from __future__ import annotations

from dataclasses import dataclass

from .trainer import LabSettings


@dataclass(frozen=True)
class Preset:
    """``name`` is the key of its title and text in the app's catalogues (``train.preset_<name>``)."""

    name: str
    settings: LabSettings
    seconds: float


PRESETS = {
    "reverse": Preset("reverse", LabSettings(task="reverse", length=12, symbols=16, lr=2e-3), 60.0),
    # learned positions and an output layer of its own: with the output tied to the embedding (or with rotary
    # positions) the task is solved by a circuit that does not look one token back, and no head reaches the
    # atlas's induction score of 0.4 (measured: bench/bench_lab_tying.py, docs/models.md)
    "induction": Preset(
        "induction", LabSettings(task="induction", length=8, symbols=60, batch=32, lr=3e-3, positional="learned"), 180.0
    ),
    # the reverse preset without any positional encoding: the model cannot tell where a token is
    "positions": Preset(
        "positions", LabSettings(task="reverse", length=12, symbols=16, lr=2e-3, positional="none"), 60.0
    ),
}
