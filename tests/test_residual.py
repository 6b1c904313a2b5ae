"""Inside the residual stream, on the bundled language model, an imported GPT-2, an imported BERT masked
LM and a bundled translator: the logit lens's last reading is the model's own prediction; the parts
(embedding, heads, feed-forward blocks, biases) add up to the stream and their logit shares to the
model's logit; switching a head off gives what the model gives with that head's gate at 0; frozen
norms are linear and exact for LayerNorm, the tutorials' std-plus-eps norm and RMSNorm."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from transformer.analysis.ablation import head_mask
from transformer.bundle import load_bundle
from transformer.core.bpe_text import encode_prompt
from transformer.core.layers import StdEpsLayerNorm
from transformer.core.masks import layer_look_ahead_mask
from transformer.residual import CROSS_HEAD, FFN, HEAD, contributions, head_effects, logit_lens, trace
from transformer.residual.frozen import freeze_norm

ROOT = Path(__file__).resolve().parent.parent
LM = ROOT / "assets" / "models" / "review-lm"
DATES = ROOT / "assets" / "models" / "dates"
LENS_TOLERANCE = 1e-5
SUM_TOLERANCE = 1e-3


@pytest.fixture(scope="module")
def lm():
    torch.set_num_threads(1)
    loaded = load_bundle(LM)
    prompt = encode_prompt(loaded.lm_tokenizer, "the film was long but the actors were wonderful and", 128)
    return loaded.model.eval(), torch.tensor([prompt.ids])


@pytest.fixture(scope="module")
def hf(tmp_path_factory):
    """{arch: (our imported model, transformers' reference)} for a tiny GPT-2 and a tiny BERT masked LM."""
    pytest.importorskip("transformers")
    from tests.hf_models import make_folder
    from transformer.hf.importer import load_hf_folder

    torch.set_num_threads(1)
    out = {}
    for arch in ("gpt2", "bert-mlm"):
        folder, reference, tok = make_folder(arch, tmp_path_factory.mktemp("hf") / arch)
        out[arch] = (load_hf_folder(folder), reference, tok)
    return out


def softmax(logits: torch.Tensor) -> np.ndarray:
    return torch.softmax(logits.double(), -1).numpy()


def check_lens(model, ids, logits: torch.Tensor, target=None) -> None:
    """The lens's last reading equals ``logits`` (T, V) softmaxed: top tokens, their probabilities, the answer."""
    lens = logit_lens(model, ids, target)
    probs = softmax(logits)
    order = np.argsort(-probs, axis=-1, kind="stable")[:, : lens.top_ids.shape[-1]]
    np.testing.assert_array_equal(lens.answer, order[:, 0])
    np.testing.assert_allclose(lens.top_probs[-1], np.take_along_axis(probs, order, -1), atol=LENS_TOLERANCE)
    assert (lens.answer_rank[-1] == 0).all()
    assert lens.top_ids.shape[:2] == ((model.config.num_decoder_layers or model.config.num_layers) + 1, logits.shape[0])


def check_sums(model, ids, logits: torch.Tensor, positions, target=None) -> None:
    """At each position, for the top token and a low-ranked one, the shares add up to the logit."""
    for position in positions:
        for token in (int(logits[position].argmax()), int(logits[position].argmin())):
            c = contributions(model, ids, position, token, target)
            assert abs(c.total - float(logits[position, token])) < SUM_TOLERANCE
            assert abs(c.logit - float(logits[position, token])) < SUM_TOLERANCE


def test_bundled_lm_lens_is_the_prediction_and_parts_add_up(lm):
    model, ids = lm
    with torch.no_grad():
        out = model(ids)
    check_lens(model, ids, out.logits[0])
    check_sums(model, ids, out.logits[0], [0, 3, ids.shape[1] - 1])
    traced = trace(model, ids, split=True)
    torch.testing.assert_close(traced.parts.stacked().sum(0), traced.streams[-1], atol=1e-5, rtol=0)
    torch.testing.assert_close(model.final_norm(traced.streams[-1]), out.hidden[0], atol=1e-5, rtol=0)


def test_bundled_lm_parts_are_every_head_and_block(lm):
    model, ids = lm
    c = contributions(model, ids)
    cfg = model.config
    assert c.grid(HEAD).shape == (cfg.num_layers, cfg.num_heads)
    assert c.by_kind(FFN).shape == (cfg.num_layers,)
    assert c.kinds.count("embedding") == 1 and c.kinds.count("bias") == 1
    assert not c.post_norm
    assert c.token == int(model(ids).logits[0, -1].argmax())


def test_one_head_share_is_what_that_head_alone_writes(lm):
    """Layer 0, head 1's share of the stream is the layer's attention output with only that head on, minus the bias."""
    model, ids = lm
    traced = trace(model, ids, split=True)
    parts = traced.parts
    row = list(zip(parts.kinds, parts.layers, parts.heads)).index((HEAD, 0, 1))
    layer = model.layers[0]
    with torch.no_grad():
        x, _ = model.embedding(ids)
        h = layer.attn_block.norm(x)
        mask = layer_look_ahead_mask(model.config, 0, ids.shape[1])  # the look-ahead mask (a local layer: its window)
        only, _ = layer.self_attn(h, h, h, mask, False, torch.tensor([0.0, 1.0, 0.0, 0.0]))
    expected = only[0] - layer.self_attn.w_o.bias
    torch.testing.assert_close(traced.parts.rows[row], expected, atol=1e-5, rtol=0)


def test_switching_a_head_off_matches_the_gated_forward(lm):
    model, ids = lm
    position, token = ids.shape[1] - 2, 17
    effects = head_effects(model, ids, position, token)
    with torch.no_grad():
        base = model(ids).logits[0, position, token]
        off = model(ids, head_mask=head_mask(2, 4, [(1, 2)])).logits[0, position, token]
    assert effects.base == pytest.approx(float(base), abs=1e-5)
    assert effects.change[1, 2] == pytest.approx(float(off - base), abs=1e-5)
    assert effects.change.shape == (2, 4) and not effects.cross


def test_imported_gpt2_lens_and_sums_match_transformers(hf):
    loaded, reference, _ = hf["gpt2"]
    ids = torch.tensor([[5, 17, 42, 8, 99, 3, 61]])
    with torch.no_grad():
        logits = reference(ids).logits[0]
    check_lens(loaded.model, ids, logits)
    check_sums(loaded.model, ids, logits, [0, 6])


def test_imported_bert_masked_lm_lens_and_sums_match_transformers(hf):
    """A post-norm encoder: every norm after a sublayer and the MLM head's activation held, the shares still add up."""
    loaded, reference, tok = hf["bert-mlm"]
    ids = torch.tensor([tok("the movie was [MASK] really")["input_ids"]])
    with torch.no_grad():
        logits = reference(ids).logits[0]
    check_lens(loaded.model, ids, logits)
    check_sums(loaded.model, ids, logits, [0, 4, ids.shape[1] - 1])
    assert contributions(loaded.model, ids, 4).post_norm
    effects = head_effects(loaded.model, ids, 4, 7)
    with torch.no_grad():
        hidden = loaded.model(ids, head_mask=head_mask(2, 4, [(0, 3)])).encoder.hidden
        off = loaded.model.token_logits(hidden)[0, 4, 7]
    assert effects.change[0, 3] == pytest.approx(float(off - logits[4, 7]), abs=1e-4)


def test_translator_decoder_lens_and_sums_with_cross_attention():
    torch.set_num_threads(1)
    loaded = load_bundle(DATES)
    model = loaded.model.eval()
    src = torch.tensor([loaded.text_encoder().encode("march 3 , 2021", 64).ids])
    tgt = model.greedy_decode(src, 20)
    with torch.no_grad():
        logits = model(src, tgt).logits[0]
    check_lens(model, src, logits, tgt)
    check_sums(model, src, logits, [0, tgt.shape[1] - 1], tgt)
    c = contributions(model, src, 1, target=tgt)
    assert c.grid(CROSS_HEAD).shape == (model.config.num_decoder_layers, model.config.num_heads)
    effects = head_effects(model, src, 1, c.token, tgt)
    assert effects.cross and effects.change.shape == (2, 8)


def test_encoder_without_vocabulary_is_refused_with_a_reason(tiny_bundle):
    model = load_bundle(tiny_bundle).model
    with pytest.raises(ValueError, match="no output vocabulary"):
        logit_lens(model, torch.tensor([[3, 4, 5]]))


@pytest.mark.parametrize("norm", [nn.LayerNorm(8, eps=1e-5), StdEpsLayerNorm(8, 1e-6), nn.RMSNorm(8, eps=1e-6)])
def test_frozen_norm_is_linear_and_exact(norm):
    torch.manual_seed(0)
    with torch.no_grad():
        norm.weight.normal_(1.0, 0.3)
        if getattr(norm, "bias", None) is not None:
            norm.bias.normal_(0.0, 0.3)
        a, b = torch.randn(5, 8) * 3, torch.randn(5, 8)
        frozen = freeze_norm(norm, a + b)
        torch.testing.assert_close(frozen.apply(a) + frozen.apply(b) + frozen.bias, norm(a + b), atol=1e-5, rtol=0)
    assert frozen.centres == (not isinstance(norm, nn.RMSNorm))
