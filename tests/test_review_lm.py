"""The bundled language model (issue 38): rotary positions, RMSNorm, SwiGLU, grouped-query attention, a local
first layer; an induction head on a probe this test builds (random ids written twice, at 31 and at 101
tokens), read from the model's own attention; its metrics say when the head appeared and how well it reads
each language."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from transformer.analysis.head_roles import induction_score
from transformer.bundle import load_bundle

FOLDER = Path(__file__).resolve().parent.parent / "assets" / "models" / "review-lm"
BEFORE = {"en": 196.3, "ko": 213.7}  # the learned-position model this one replaced (validation perplexity)


@pytest.fixture(scope="module")
def loaded():
    torch.set_num_threads(1)
    return load_bundle(FOLDER)


def test_it_has_the_modern_layers(loaded):
    c = loaded.config
    assert (c.positional, c.norm_style, c.gated_ffn, c.activation) == ("rotary", "rms", True, "silu")
    assert c.num_heads == 4 and c.kv_heads == 2 and (c.local_window, c.local_layers) == (2, (0,))


@pytest.mark.parametrize("period", [15, 50])  # rows of 31 and 101 tokens
def test_a_head_attends_to_the_token_after_the_earlier_occurrence(loaded, period):
    gen = torch.Generator().manual_seed(123)  # not the training probe's seed
    span = torch.randint(3, loaded.config.vocab_size, (8, period), generator=gen)
    ids = torch.cat([torch.full((8, 1), loaded.config.bos_id), span, span], dim=1)
    with torch.no_grad():
        out = loaded.model(ids, need_weights=True)
    weights = np.stack([a.weights.numpy() for a in out.attention])  # (L, B, H, T, T)
    scores = induction_score(weights, period, start=1).mean(axis=1)  # (L, H)
    assert scores.max() >= 0.4
    assert np.unravel_index(scores.argmax(), scores.shape)[0] == 1  # in the second, global layer
    nll = -F.log_softmax(out.logits, -1)[:, :-1].gather(-1, ids[:, 1:, None]).squeeze(-1)
    first, second = nll[:, 1:period].mean(), nll[:, period + 1 : 2 * period].mean()
    assert first > 8.0 and second < 1.5  # it cannot guess random ids, and it copies them the second time


def test_metrics_keep_the_curve_and_beat_the_model_before_in_each_language(loaded):
    metrics = json.loads((FOLDER / "metrics.json").read_text(encoding="utf-8"))
    induction = metrics["induction"]
    assert induction["first_step_at_or_above_0.4"] is not None
    assert induction["curve"][0]["step"] == 0 and induction["curve"][-1]["max"] >= 0.4
    for lang, before in BEFORE.items():
        assert metrics["validation"][lang]["perplexity"] < before


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize(("page", "lang", "words"), [
    ("generate", "en", "Local layers: in layer 1 each piece sees only the last 2 pieces"),
    ("generate", "ko", "로컬 레이어: 1번 레이어에서는 각 조각이 자기까지의 마지막 2개 조각만"),
    ("masks", "en", "Local layers: in layer 1"),
    ("masks", "ko", "로컬 레이어: 1번 레이어"),
])  # fmt: skip
def test_the_pages_say_that_the_first_layer_is_local(page, lang, words):
    from tests.app_helpers import open_app, texts

    # English opens on SmolLM2 (no local layers): review-lm is chosen; the Masks page's LM is in the look-ahead view
    at = open_app(page, state={"gen_model": "review-lm", "lm_model": "review-lm"}, lang=lang, mask_view="look-ahead")
    assert any(words in c for c in texts(at.caption))
    if page == "masks":
        assert any("local layer" in h or "로컬 레이어" in h for h in texts(at.subheader))
