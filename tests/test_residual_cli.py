"""``inspect --lens --contributions``: the lens's last layer gives the record's own prediction; the
contributions' parts add up to their ``sum``, which is the model's ``logit`` (within 1e-3), on the
bundled language model, the bundled dates translator and an imported BERT masked LM; a classifier
gets a note instead."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from transformer.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "assets" / "models"


def run_cli(capsys, *args) -> dict:
    torch.set_num_threads(1)
    code = main(["inspect", *args])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def check_contributions(entry: dict) -> None:
    assert abs(sum(p["value"] for p in entry["parts"]) - entry["sum"]) < 1e-3
    assert abs(entry["sum"] - entry["logit"]) < 1e-3


def test_language_model_lens_and_contributions(capsys):
    doc = run_cli(capsys, "--checkpoint", str(MODELS / "review-lm"), "--text", "the movie was really", "a great",
                  "--lens", "--contributions", "--attention", "none")  # fmt: skip
    assert len(doc["inputs"]) == 2
    for record in doc["inputs"]:
        lens = record["lens"]
        assert [e["layer"] for e in lens] == [0, 1, 2]
        last, predicted = lens[-1]["next_tokens"], record["prediction"]["next_tokens"]
        assert [t["id"] for t in last] == [t["id"] for t in predicted[: len(last)]]
        assert [t["token"] for t in last] == [t["token"] for t in predicted[: len(last)]]
        for ours, theirs in zip(last, predicted):
            assert ours["probability"] == pytest.approx(theirs["probability"], abs=1e-5)
        assert lens[-1]["answer_rank"] == 0
        parts = record["contributions"]
        check_contributions(parts)
        assert parts["id"] == predicted[0]["id"]
        kinds = [p["part"] for p in parts["parts"]]
        assert kinds.count("head") == 8 and kinds.count("ffn") == 2 and kinds.count("embedding") == 1


def test_translator_contributions_include_cross_attention(capsys):
    doc = run_cli(capsys, "--checkpoint", str(MODELS / "dates"), "--text", "march 3 , 2021", "--contributions")
    parts = doc["inputs"][0]["contributions"]
    check_contributions(parts)
    kinds = [p["part"] for p in parts["parts"]]
    assert kinds.count("cross-head") == kinds.count("head") == 16
    assert "lens" not in doc["inputs"][0]


def test_masked_lm_reads_the_blank(tmp_path, capsys):
    pytest.importorskip("transformers")
    from tests.hf_models import make_folder

    folder, reference, tok = make_folder("bert-mlm", tmp_path / "bert")
    doc = run_cli(
        capsys, "--checkpoint", str(folder), "--text", "the movie was [MASK] really", "--lens", "--contributions"
    )
    record = doc["inputs"][0]
    blank = record["ids"].index(tok.mask_token_id)
    with torch.no_grad():
        logits = reference(torch.tensor([record["ids"]])).logits[0, blank]
    assert record["lens"][-1]["position"] == blank
    assert record["lens"][-1]["next_tokens"][0]["id"] == int(logits.argmax())
    check_contributions(record["contributions"])
    assert record["contributions"]["logit"] == pytest.approx(float(logits.max()), abs=1e-4)


def test_classifier_gets_a_note(tiny_bundle, capsys):
    doc = run_cli(capsys, "--checkpoint", str(tiny_bundle), "--text", "the movie was good", "--lens")
    assert "no output vocabulary" in doc["inputs"][0]["residual_note"]
