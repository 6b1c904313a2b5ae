"""Model folders named by whoever runs the server ($ATTENTION_LAB_MODELS): a downloaded Hugging Face
folder too large to upload is offered to every session and loaded once for all."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from tests.app_helpers import array, figures, open_app
from tests.hf_models import make_folder
from ui import models

SENTENCE = "the movie was great"


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return make_folder("bert-cls", tmp_path_factory.mktemp("served") / "tiny-bert")


@pytest.fixture
def served(bert, monkeypatch, tmp_path):
    not_a_model = tmp_path / "empty"
    not_a_model.mkdir()
    monkeypatch.setenv(models.SERVER_MODELS_ENV, os.pathsep.join([str(bert[0]), str(not_a_model), "/no/such/folder"]))
    return bert


def test_the_sidebar_offers_the_servers_folder_and_leaves_out_what_is_no_model(served):
    assert models.server_models() == {"server: tiny-bert": served[0]}
    assert models.bundled_models()[-1] == "server: tiny-bert"


def test_every_session_reads_it_with_the_references_probabilities(served):
    folder, reference, tokenizer = served
    with torch.no_grad():
        theirs = torch.softmax(reference(**tokenizer(SENTENCE, return_tensors="pt")).logits, -1)[0].numpy()
    for _ in range(2):  # two sessions, one model
        at = open_app("playground", model="server: tiny-bert", text=SENTENCE)
        assert at.sidebar.selectbox(key="model").value == "server: tiny-bert"
        bars = figures(at)["probability-bars"]["data"][0]
        np.testing.assert_allclose(array(bars["x"]), theirs, atol=1e-5)
    assert models.load_shared("server: tiny-bert", "cpu") is models.load_shared("server: tiny-bert", "cpu")


def test_a_served_masked_language_model_fills_in_the_blank(tmp_path_factory, monkeypatch):
    folder, reference, tokenizer = make_folder("bert-mlm", tmp_path_factory.mktemp("served") / "tiny-mlm")
    monkeypatch.setenv(models.SERVER_MODELS_ENV, str(folder))
    at = open_app("fill_mask", model="server: tiny-mlm")
    assert at.selectbox(key=at.selectbox[0].key).value == "server: tiny-mlm"
    assert any("`[MASK]`" in c.value for c in at.caption)  # the blank written as code, not read as a link
    assert any(meta.startswith("fill-mask-guesses-") for meta in figures(at))
