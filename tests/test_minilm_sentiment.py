"""The sentiment model fine-tuned here on the real encoder (assets/models/minilm-sentiment): a Hugging Face
BertForSequenceClassification folder that our importer reads as transformers does, calibrated, and right on
the negation and contrast sentences a class types first."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from transformer.analysis.analyze import analyze
from transformer.hf import load_hf_folder
from transformer.text.finetune_encoder import hf_state

FOLDER = Path(__file__).resolve().parent.parent / "assets" / "models" / "minilm-sentiment"
PROBES = {
    "not bad at all": "positive",
    "I expected it to be boring but it was great": "positive",
    "the movie was not good": "negative",
    "I did not enjoy it": "negative",
}


@pytest.fixture(scope="module")
def loaded():
    torch.set_num_threads(1)
    return load_hf_folder(FOLDER)


def test_it_reads_as_transformers_reads_it(loaded):
    transformers = pytest.importorskip("transformers")
    reference = transformers.AutoModelForSequenceClassification.from_pretrained(
        FOLDER, attn_implementation="eager", dtype=torch.float32
    ).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(FOLDER)
    texts = list(PROBES) + ["영화 좋아요 🎉 but the plot was thin"]
    result = analyze(loaded, texts, calibration="none")
    for j, text in enumerate(texts):
        ids = tokenizer(text)["input_ids"]
        n = int(result.lengths[j])
        assert list(result.ids[j][:n]) == ids
        with torch.no_grad():
            theirs = reference(torch.tensor([ids]), output_attentions=True)
        assert np.abs(result.logits[j] - theirs.logits[0].numpy()).max() < 1e-5
        for layer in range(6):
            assert np.abs(result.attention[j, layer, :, :n, :n] - theirs.attentions[layer][0].numpy()).max() < 1e-5


def test_the_probes_a_class_types_first_are_right_and_calibrated(loaded):
    result = analyze(loaded, list(PROBES))
    assert result.label_names == ["negative", "positive"]
    assert loaded.config.temperature != 1.0  # fitted on validation, read from metrics.json
    for j, want in enumerate(PROBES.values()):
        assert result.label_names[int(result.probabilities[j].argmax())] == want


def test_metrics_say_what_it_was_trained_on_and_how_it_scored():
    metrics = json.loads((FOLDER / "metrics.json").read_text(encoding="utf-8"))
    assert "all-MiniLM-L6-v2" in metrics["base_model"]
    assert metrics["metrics"]["val_short"] > 0.85 and metrics["calibration"]["temperature"] > 0
    assert (FOLDER / "LICENSE").is_file()


def test_the_export_inverts_the_import(loaded):
    state = hf_state(loaded.model)
    assert state["classifier.weight"].shape == (2, 384) and state["bert.pooler.dense.weight"].shape == (384, 384)
    assert all(v.dtype == torch.float16 for v in state.values())
    assert len(state) == 3 + 2 + 6 * 16 + 4


def test_unk_is_marked_unknown_though_it_is_a_special_token(loaded):
    """WordPiece's [UNK] is one of the tokenizer's special tokens, yet a piece that became it is unknown:
    the Playground colours it orange (unknown), not violet (special) as [CLS] and [SEP]."""
    from ui.markdown import SPECIAL, UNKNOWN, token_chips

    result = analyze(loaded, ["the ✈ movie"])
    assert result.tokens[0] == ["[CLS]", "the", "[UNK]", "movie", "[SEP]"]
    assert result.unknown[0] == [False, False, True, False, False]
    chips = token_chips(result.tokens[0], result.unknown[0]).split(" ")
    assert chips[2].startswith(f":{UNKNOWN}-background") and chips[0].startswith(f":{SPECIAL}-background")
