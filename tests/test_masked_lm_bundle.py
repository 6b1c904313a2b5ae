"""Masked language models trained here as bundles (config kind "masked-lm"): the bundle computes what the
encoder and head it came from compute, typed blanks become <mask>, and the shipped ones say what they are."""

from __future__ import annotations

import json

import pytest
import torch

from transformer import ModelConfig, load_bundle, save_bundle
from transformer.analysis.fill_mask import fill_mask
from transformer.core.loaded import LoadedModel
from transformer.core.model import SequenceClassifier
from transformer.core.tokenizer import MASK, PAD, UNK, Vocab
from transformer.text.masked_lm import as_masked_lm, largest_difference, score_blanks
from transformer.text.pretrain import MaskedLMHead
from ui.fill_mask import BUNDLED
from ui.models import MODELS_DIR

WORDS = ["the", "movie", "was", "great", "bad", "film", "good", "fun", "##s", "i", "liked", "it"]


@pytest.fixture(scope="module")
def tiny():
    """(a random encoder + head as a classifier would carry them, the bundle made of them, reloaded)."""
    torch.manual_seed(0)
    vocab = Vocab([UNK, PAD, MASK, *WORDS])
    config = ModelConfig(
        vocab_size=len(vocab), d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0, pad_id=1,
        label_names=("negative", "positive"),
    )  # fmt: skip
    classifier = SequenceClassifier(config).eval()
    head = MaskedLMHead(classifier.encoder.embedding.tokens).eval()
    with torch.no_grad():
        head.bias.normal_()
    model, masked_config = as_masked_lm(classifier, head)
    return classifier, head, model, masked_config, vocab


def test_the_bundle_computes_what_the_encoder_and_head_compute(tiny, tmp_path):
    classifier, head, model, config, vocab = tiny
    assert config.kind == "masked-lm" and not config.has_head
    assert largest_difference(model, classifier, head) < 1e-6
    save_bundle(tmp_path / "mlm", model, config, vocab, {"what": "a test"})
    loaded = load_bundle(tmp_path / "mlm")
    assert loaded.is_masked_lm
    ids = torch.tensor([[3, 4, 2, 6]])
    with torch.no_grad():
        again = loaded.model.token_logits(loaded.model(ids).encoder.hidden)
        first = head(classifier.encoder(ids).hidden)
    assert torch.allclose(again, first, atol=1e-5)
    assert loaded.model.mlm_head.decoder.weight is loaded.model.encoder.embedding.tokens.weight  # tied again


def test_a_blank_typed_either_way_becomes_the_mask_and_other_specials_stay_unknown(tiny):
    _, _, model, config, vocab = tiny
    encoder = LoadedModel(model, config, vocab).text_encoder()
    mask_id = vocab.stoi[MASK]
    assert encoder.mask_id == mask_id
    assert encoder.encode("the movie was [MASK]").ids == [3, 4, 5, mask_id]
    assert encoder.encode("the <MASK> film").ids == [3, mask_id, 8]
    typed_pad = encoder.encode("the <pad> film")
    assert vocab.stoi[PAD] not in typed_pad.ids and True in typed_pad.unknown
    cut = encoder.encode("the movie [mask] was great", max_len=3)
    assert cut.ids == [3, 4, mask_id] and cut.truncated and cut.original_length == 5
    assert encoder.decode([3, 8, 11, mask_id, 1]) == "the films"  # "##s" joins, <mask> and <pad> left out


def test_fill_mask_guesses_at_the_blank_and_scores_fixed_blanks(tiny, tmp_path):
    _, _, model, config, vocab = tiny
    loaded = LoadedModel(model, config, vocab)
    result = fill_mask(loaded, "the movie was [MASK]", top_k=3)
    assert [b.position for b in result.blanks] == [3]
    probabilities = [g.probability for g in result.blanks[0].guesses]
    assert probabilities == sorted(probabilities, reverse=True) and 0 < sum(probabilities) <= 1
    blanks = tmp_path / "blanks.json"
    best = result.blanks[0].guesses[0].token
    blanks.write_text(json.dumps({"en": [["the movie was [MASK]", best], ["the movie was [MASK]", "zzz"]]}))
    scores = score_blanks(loaded, "en", blanks)
    assert (scores["items"], scores["top1"], scores["top5"]) == (2, 1, 1)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_shipped_masked_language_models_say_what_they_are(lang):
    folder = MODELS_DIR / BUNDLED[lang]
    if not (folder / "config.json").is_file():
        pytest.skip(f"{folder.name} is not bundled in this checkout")
    loaded = load_bundle(folder)
    metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    assert loaded.is_masked_lm and "trained here" in metrics["what"]
    assert metrics["parity_largest_logit_difference"] <= 1e-5
    blanks = metrics["fixed_blanks"]
    assert blanks["items"] == 20 and 0 <= blanks["top1"] <= blanks["top5"] <= 20
    assert score_blanks(loaded, lang)["top5"] == blanks["top5"]  # the figure is what the model does now
