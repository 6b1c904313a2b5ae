"""Shared fixtures: a small random model saved in the bundled format (made by the tests)."""

import os

import pytest
import torch

from transformer.bundle import save_bundle
from transformer.core.config import ModelConfig
from transformer.core.model import SequenceClassifier
from transformer.core.tokenizer import Vocab

# The page tests were written on the model the course notebooks build; English sessions start on minilm-sentiment
# otherwise (tests/test_default_english_model.py checks that with this setting removed). Servers the browser
# tests start inherit it.
os.environ.setdefault("ATTENTION_LAB_ENGLISH_MODEL", "imdb-sentiment")

WORDS = "the movie was great bad not good plot acting film boring loved it a and".split()


def tiny_config(**changes) -> ModelConfig:
    base = ModelConfig(
        vocab_size=len(WORDS) + 2,
        d_model=16,
        num_heads=4,
        num_layers=2,
        d_ff=32,
        max_len=64,
        dropout=0.0,
        scale_embedding=True,
        pooling="mean_max",
    )
    return base.replace(**changes)


@pytest.fixture
def tiny_vocab() -> Vocab:
    return Vocab.build([WORDS])


@pytest.fixture
def tiny_bundle(tmp_path, tiny_vocab):
    torch.manual_seed(0)
    config = tiny_config(vocab_size=len(tiny_vocab), pad_id=tiny_vocab.pad_id)
    model = SequenceClassifier(config).eval()
    return save_bundle(tmp_path / "tiny", model, config, tiny_vocab, metrics={"note": "random weights"})
