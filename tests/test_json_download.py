"""The Attention page's JSON download and ``python -m transformer inspect --format json`` are one
writer (``transformer.export``): for the same input, model and length limit they are the same bytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from .app_helpers import ROOT, open_app, record_downloads

CASES = [
    ("imdb-sentiment", "the movie was not good , the movie was bad"),  # an encoder classifier
    ("dates", "may 9 , 2018"),  # the translation model: decoder self and cross attention, its check of the output
]


def page_download(monkeypatch, model: str, text: str) -> tuple[bytes, int]:
    """The Attention page's JSON download for ``text`` with ``model`` (made as a click makes it),
    and the maximum length the page used."""
    made = record_downloads(monkeypatch)
    at = open_app("attention", text=text, model=model, lang="en")
    selection = at.session_state["selection"]
    assert selection.model_key == model and selection.device == "cpu"
    return made["json"](), selection.max_len


def cli_output(model: str, text: str, max_len: int) -> bytes:
    """What ``inspect`` prints for ``text`` (a child process: the bytes a user's shell receives)."""
    command = [sys.executable, "-m", "transformer", "inspect", "--checkpoint", str(ROOT / "assets" / "models" / model)]
    command += ["--text", text, "--max-len", str(max_len), "--device", "cpu", "--format", "json"]
    env = os.environ | {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, cwd=ROOT, env=env, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


@pytest.mark.parametrize(("model", "text"), CASES)
def test_the_attention_pages_json_download_is_what_the_cli_prints(monkeypatch, model, text):
    downloaded, max_len = page_download(monkeypatch, model, text)
    printed = cli_output(model, text, max_len)
    assert downloaded == printed
    (record,) = json.loads(printed)["inputs"]
    assert record["text"] == text and "".join(record["tokens"]) == text.replace(" ", "")  # dates: one digit a token
    n, weights = len(record["tokens"]), record["attention"]
    assert np.array(weights["encoder"]).shape[-2:] == (n, n)
    if model == "dates":  # decoder tokens x decoder tokens, decoder tokens x source tokens, and the output checked
        m = len(record["decoder_tokens"])
        assert np.array(weights["decoder_self"]).shape[-2:] == (m, m)
        assert np.array(weights["cross"]).shape[-2:] == (m, n)
        assert record["translation"]["reliable"] is True
    else:
        assert set(weights) == {"encoder"} and record["prediction"]["label"] in ("negative", "positive")
