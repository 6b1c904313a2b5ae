"""One probability everywhere: the CLI, ``analyze()`` and the Playground page give the same
calibrated number (softmax(logits / config.temperature)) for the same sentence, with the raw one beside."""

from __future__ import annotations

import json

import numpy as np
import pytest

from transformer import analyze, load_model
from transformer.cli.main import main
from transformer.text.calibration import softmax

from .app_helpers import MODEL, open_app

SENTENCES = ["not bad", "I thought it would be boring but it was wonderful", "I did not like it"]


@pytest.fixture(scope="module")
def loaded():
    return load_model(MODEL)


def cli_records(capsys, *extra: str) -> list[dict]:
    code = main(["inspect", "--checkpoint", str(MODEL), "--text", *SENTENCES, "--format", "jsonl", *extra])
    out = capsys.readouterr().out
    assert code == 0
    return [json.loads(line) for line in out.splitlines()]


def test_the_bundled_model_has_a_fitted_temperature(loaded):
    assert loaded.config.temperature != 1.0  # otherwise calibrated and raw would be the same number


def test_analyze_gives_the_calibrated_probabilities_and_the_raw_ones(loaded):
    result = analyze(loaded, SENTENCES)
    np.testing.assert_allclose(result.probabilities, softmax(result.logits, loaded.config.temperature), atol=1e-6)
    np.testing.assert_allclose(result.raw_probabilities, softmax(result.logits), atol=1e-6)
    assert result.temperature == pytest.approx(loaded.config.temperature)
    assert not np.allclose(result.probabilities, result.raw_probabilities)
    entry = result.prediction(0)
    assert entry["probabilities"]["negative"] == pytest.approx(float(result.probabilities[0, 0]))
    assert entry["raw_probabilities"]["negative"] == pytest.approx(float(result.raw_probabilities[0, 0]))
    plain = analyze(loaded, SENTENCES, calibration="none")
    np.testing.assert_allclose(plain.probabilities, result.raw_probabilities, atol=1e-7)
    with pytest.raises(ValueError, match="temperature"):
        analyze(loaded, SENTENCES, calibration="platt")


@pytest.mark.parametrize("attention", ["all", "none"])  # the analysis path and the fused fast path
def test_cli_records_equal_analyze(loaded, capsys, attention):
    records = cli_records(capsys, "--attention", attention)
    result = analyze(loaded, SENTENCES)
    for i, record in enumerate(records):
        expected = result.prediction(i)
        assert record["prediction"]["label"] == expected["label"]
        for key in ("probabilities", "raw_probabilities"):
            assert record["prediction"][key] == pytest.approx(expected[key], abs=1e-5)
        assert record["prediction"]["temperature"] == pytest.approx(loaded.config.temperature)


def test_cli_calibration_none_prints_the_raw_softmax(loaded, capsys):
    records = cli_records(capsys, "--attention", "none", "--calibration", "none")
    raw = analyze(loaded, SENTENCES).raw_probabilities
    for record, expected in zip(records, raw):
        assert list(record["prediction"]["probabilities"].values()) == pytest.approx(list(expected), abs=1e-5)
        assert record["prediction"]["temperature"] == 1.0


def test_cli_rejects_an_unknown_calibration(capsys):
    with pytest.raises(SystemExit):
        main(["inspect", "--checkpoint", str(MODEL), "--text", "good", "--calibration", "platt"])
    assert "--calibration" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("page", "label", "raw_column", "atol"),
    [("playground", "prediction", "raw", 1e-5), ("classifier", "label", "raw probability", 1e-4)],  # rounds to 4
)
def test_the_pages_table_shows_the_cli_number_and_the_raw_one_beside_it(capsys, page, label, raw_column, atol):
    records = cli_records(capsys, "--attention", "none")
    at = open_app(page, text="\n".join(SENTENCES))
    table = at.dataframe[0].value
    assert list(table[label]) == [r["prediction"]["label"] for r in records]
    shown = [r["prediction"]["probabilities"][r["prediction"]["label"]] for r in records]
    raw = [r["prediction"]["raw_probabilities"][r["prediction"]["label"]] for r in records]
    np.testing.assert_allclose(table["probability"], shown, atol=atol)
    np.testing.assert_allclose(table[raw_column], raw, atol=atol)


def test_attribute_prints_the_same_calibrated_and_raw_numbers(loaded, capsys):
    records = cli_records(capsys, "--attention", "none")
    assert main(["attribute", "--checkpoint", str(MODEL), "--text", SENTENCES[0], "--steps", "4"]) == 0
    attribution = json.loads(capsys.readouterr().out)["inputs"][0]
    assert attribution["probabilities"] == pytest.approx(records[0]["prediction"]["probabilities"], abs=1e-5)
    assert attribution["raw_probabilities"] == pytest.approx(records[0]["prediction"]["raw_probabilities"], abs=1e-5)
