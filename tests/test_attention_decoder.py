"""The Attention page and the analysis on decoder-only language models (issue 60), and the head atlas's
probe-measured roles (issue 57, part 4). review-lm (2 layers x 4 heads) is bundled; SmolLM2 tests are
skipped where its file is missing. Heads are 0-based in arrays, 1-based on the page ("L19 H7")."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from transformer import analyze, load_bundle
from transformer.analysis.head_roles import assign_roles
from transformer.lm.inspect import lm_record
from ui.decoder_attention import LM_WEIGHTS_BYTES, blocked_cells, induction_here, repeated, token_cap

from .app_helpers import array, figures, open_app, record_downloads

ROOT = Path(__file__).resolve().parent.parent
SMOLLM2 = ROOT / "assets" / "models" / "smollm2-135m-instruct"
HAS_SMOLLM2 = any(SMOLLM2.glob("*.gguf"))
TEXT = "the movie was great. the movie was great."


@pytest.fixture(scope="module")
def review_lm():
    torch.set_num_threads(1)
    return load_bundle(ROOT / "assets" / "models" / "review-lm", torch.device("cpu"))


def test_analysis_reads_a_language_model_as_inspect_and_matches_its_forward(review_lm):
    result = analyze(review_lm, [TEXT])
    assert result.tokens[0][:3] == ["<|endoftext|>", "the", "␣movie"]  # the start token it was trained with
    ids = torch.tensor([result.ids[0].tolist()])
    with torch.no_grad():
        out = review_lm.model(ids, need_weights=True)
    weights = np.stack([w.weights[0].numpy() for w in out.attention])
    np.testing.assert_allclose(result.attention_for(0), weights, atol=1e-6)
    assert (np.triu(result.attention_for(0), 1) == 0).all()  # causal
    record, cli = result.input_record(0), lm_record(review_lm.model, review_lm.lm_tokenizer, TEXT, True)
    assert list(record) == list(cli) and record["tokens"] == cli["tokens"] and record["ids"] == cli["ids"]
    mine, theirs = record["prediction"]["next_tokens"], cli["prediction"]["next_tokens"]
    assert [m["token"] for m in mine] == [c["token"] for c in theirs]
    np.testing.assert_allclose([m["probability"] for m in mine], [c["probability"] for c in theirs], atol=1e-5)
    np.testing.assert_allclose(record["attention"]["decoder_self"], cli["attention"]["decoder_self"], atol=1e-6)


def test_repeats_put_two_copies_where_the_induction_score_reads_them(review_lm):
    twice = repeated(review_lm, "the movie was great", "twice", 128)
    body = list(twice.ids[twice.start : twice.start + twice.period])
    assert twice.start == 1 and twice.ids[0] == review_lm.config.bos_id
    assert list(twice.ids) == [twice.ids[0], *body, *body] and twice.period == 4
    assert len(repeated(review_lm, "word " * 500, "twice", 21).ids) == 21  # both copies cut to fit
    random = repeated(review_lm, "", "random", 128)
    assert random.period == 40 and random.ids[1:41] == random.ids[41:81]
    weights = np.zeros((1, 1, 81, 81))
    weights[0, 0, 41 + np.arange(39), 2 + np.arange(39)] = 1.0  # a perfect induction head
    assert induction_here(weights, random)[0, 0] == 1.0
    assert induction_here(weights, None) is None


def test_token_cap_bounds_a_request_and_the_mask_marks_later_keys():
    from transformer.core.decoder import lm_config

    smollm2_like = lm_config(49152, num_layers=30, num_heads=9, d_model=576, max_len=8192)
    cap = token_cap(smollm2_like)
    assert 200 < cap < 512
    assert 4 * (270 * cap**2 + 2 * 30 * cap * 576) <= LM_WEIGHTS_BYTES
    assert 4 * (270 * (cap + 1) ** 2 + 2 * 30 * (cap + 1) * 576) > LM_WEIGHTS_BYTES
    assert token_cap(lm_config(100, max_len=128)) == 128  # a small model: its whole context
    local = lm_config(100, max_len=16, local_layers=(1,), local_window=2)
    assert blocked_cells(local, 0, 4, "head").tolist() == np.triu(np.ones((4, 4), bool), 1).tolist()
    assert blocked_cells(local, 1, 4, "head")[3].tolist() == [True, True, False, False]  # outside the window
    assert not blocked_cells(local, 1, 4, "rollout")[3].any()


def test_probe_roles_come_before_the_sink():
    sink = np.array([[0.95, 0.95, 0.3]])
    induction = np.array([[0.9, 0.1, 0.1]])
    previous = np.array([[0.2, 0.5, 0.1]])
    scores = {"sink": sink, "induction": induction, "previous": previous}
    roles, strength = assign_roles(scores, ("induction", "previous"))
    assert roles.tolist() == [["induction", "previous", "mixed"]] and strength[0, 0] == 0.9
    assert assign_roles(scores)[0].tolist() == [["sink", "sink", "mixed"]]  # without a probe: the largest


def test_attention_page_on_review_lm_masks_the_future_and_repeats(review_lm, monkeypatch):
    downloads = record_downloads(monkeypatch)
    at = open_app("attention", model="review-lm", text="the movie was great", repeat="Sentence twice")
    spec = figures(at)["attention-heatmap"]
    z = array(spec["data"][0]["z"])
    n = z.shape[0]
    assert n == 9 and spec["data"][0]["y"][:2] == ["0:⟨endoftext⟩", "1:the"]  # start token marked, 4 tokens twice
    blocked = blocked_cells(review_lm.config, 0, n, "head")  # layer 1's mask (a local layer's window too)
    assert blocked[np.triu_indices(n, 1)].all() and np.isnan(z[blocked]).all() and not np.isnan(z[~blocked]).any()
    assert spec["layout"]["plot_bgcolor"] != "white"
    assert any("Induction score of **L1 H1**" in m.value for m in at.markdown)
    assert any("start token" in c.value for c in at.caption)
    (record,) = json.loads(downloads["json"]())["inputs"]  # inspect's record of a language model
    assert record["ids"] == [review_lm.config.bos_id, *record["ids"][1:5], *record["ids"][1:5]]
    assert np.array(record["attention"]["decoder_self"]).shape == (2, 4, 9, 9)
    assert len(record["prediction"]["next_tokens"]) == 10


@pytest.mark.skipif(not HAS_SMOLLM2, reason="SmolLM2's GGUF file is not here")
def test_smollm2_induction_head_on_the_page_and_in_the_atlas():
    from ui.atlas import lm_atlas, lm_probe_scores

    at = open_app("attention", model="smollm2-135m-instruct", text="The cat sat on the mat because it was tired.",
                  repeat="Sentence twice", layer="19", head="7", timeout=300)  # fmt: skip
    z = array(figures(at)["attention-heatmap"]["data"][0]["z"])
    period = 11  # the sentence's tokens (SmolLM2 adds no start token)
    stripe = z[period + np.arange(period - 1), 1 + np.arange(period - 1)]
    assert z.shape == (22, 22) and stripe.mean() > 0.5  # the induction stripe, one above the diagonal's copy
    probe = lm_probe_scores("smollm2-135m-instruct", "cpu")
    assert np.unravel_index(probe["induction"].argmax(), probe["induction"].shape) == (18, 6)
    assert probe["induction"][18, 6] > 0.8 and probe["previous"][16, 0] > 0.8
    (part,) = lm_atlas("smollm2-135m-instruct", "cpu", "Once upon a time, there was a little girl who")
    assert part.roles[18, 6] == "induction" and part.roles[16, 0] == "previous"  # not "sink" on a short text
    assert part.scores["sink"][18, 6] > 0.9  # what named it a sink before
