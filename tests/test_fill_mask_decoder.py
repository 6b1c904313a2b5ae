"""A decoder fills a blank (``transformer.analysis.decoder_fill``), on a tiny random Llama-like model: the
candidates are the word-starting pieces among the top next tokens at the blank, grown by the model's own
likeliest pieces; each score is the whole sentence's log-probability as a plain full pass computes it, the
words after the blank included; no step forms logits for more than a bounded number of rows."""

from __future__ import annotations

import pytest
import torch

from tests.test_lm_bundle import TEXTS
from transformer.analysis.decoder_fill import CHUNK, MAX_PIECES, fill_blank_decoder, split_blank
from transformer.bundle import LoadedModel
from transformer.core.bpe import EOT, train_tokenizer
from transformer.core.decoder import DecoderLM, init_weights, lm_config

TEXT = "the movie was [MASK] and the acting was great."
POOL = 40


@pytest.fixture(scope="module")
def tiny():
    """A random rotary, grouped-query, RMSNorm, SwiGLU decoder (SmolLM2's layout, tiny) and its tokenizer."""
    torch.manual_seed(0)
    tok = train_tokenizer(TEXTS, vocab_size=300, min_frequency=1)
    config = lm_config(tok.get_vocab_size(), d_model=32, num_heads=4, num_kv_heads=2, num_layers=2, d_ff=64,
                       max_len=160, positional="rotary", norm_style="rms", gated_ffn=True,
                       bos_id=tok.token_to_id(EOT), eos_id=tok.token_to_id(EOT))  # fmt: skip
    model = DecoderLM(config)
    init_weights(model, std=0.3)
    return LoadedModel(model.eval(), config, None, name="tiny-decoder", lm_tokenizer=tok)


def full_pass_logp(loaded, ids: list[int]) -> torch.Tensor:
    """(T - 1,) log p(ids[t + 1] | ids[: t + 1]) from one plain forward over the whole sentence."""
    with torch.no_grad():
        logits = loaded.model(torch.tensor([ids])).logits[0].double()
    return torch.log_softmax(logits, -1)[:-1].gather(1, torch.tensor(ids[1:])[:, None])[:, 0]


def test_every_score_is_the_whole_sentences_log_probability(tiny):
    found = fill_blank_decoder(tiny, TEXT, top_k=10, pool=POOL)
    assert 1 <= len(found.candidates) <= 10 and found.scored >= len(found.candidates)
    scores = [c.score for c in found.candidates]
    assert scores == sorted(scores, reverse=True)
    for c in found.candidates:
        ids = found.before_ids + list(c.ids) + found.after_ids
        parts = full_pass_logp(tiny, ids)
        p = len(found.before_ids) - 1
        assert c.score == pytest.approx(float(parts.sum()), abs=1e-4)
        assert c.before == pytest.approx(float(parts[:p].sum()), abs=1e-4)
        assert c.word_logp == pytest.approx(float(parts[p : p + len(c.ids)].sum()), abs=1e-4)
        assert c.after == pytest.approx(float(parts[p + len(c.ids) :].sum()), abs=1e-4)
        assert c.after < 0 and len(found.after_ids) == len(tiny.lm_tokenizer.encode(" and the acting was great.").ids)


def test_candidates_are_top_next_tokens_grown_by_the_models_own_pieces(tiny):
    tok = tiny.lm_tokenizer
    found = fill_blank_decoder(tiny, TEXT, top_k=100, pool=POOL)
    before = found.before_ids
    with torch.no_grad():
        at_blank = torch.softmax(tiny.model(torch.tensor([before])).logits[0, -1], -1)
    order = at_blank.argsort(descending=True).tolist()
    for c in found.candidates:
        assert order.index(c.ids[0]) + 1 == c.left_rank <= POOL
        assert c.left_prob == pytest.approx(float(at_blank[c.ids[0]]), rel=1e-5)
        assert tok.decode([c.ids[0]]).startswith(" ")  # the blank follows a space: a word starts there
        with torch.no_grad():
            logits = tiny.model(torch.tensor([before + list(c.ids)])).logits[0]
        for n in range(1, len(c.ids)):  # each further piece: the likeliest there, and it continues the word
            assert c.ids[n] == int(logits[len(before) + n - 1].argmax())
            assert tok.decode([c.ids[n]])[:1].isalnum()
        if len(c.ids) < MAX_PIECES:  # and the likeliest piece after the word does not continue it
            assert not tok.decode([int(logits[-1].argmax())])[:1].isalnum()
    skipped = [i for i in order[:POOL] if not tok.decode([i]).startswith(" ")]
    assert found.scored <= POOL - len(skipped)


def test_no_step_forms_logits_for_more_than_a_bounded_number_of_rows(tiny):
    rows = []  # rows of logits (vocabulary-wide) each call of the output layer forms
    hook = tiny.model.output.register_forward_hook(
        lambda _m, _i, out: rows.append(out.reshape(-1, out.shape[-1]).shape[0])
    )
    text = " ".join(["the movie was great"] * 10) + " [MASK] and the acting was great."
    try:
        found = fill_blank_decoder(tiny, text, pool=POOL)
    finally:
        hook.remove()
    assert len(found.before_ids) > CHUNK and found.candidates
    assert rows and max(rows) <= max(POOL, CHUNK)


@pytest.mark.parametrize("text", ["no blank here", "[MASK] and [MASK]"])
def test_a_decoder_asks_for_exactly_one_blank(text):
    with pytest.raises(ValueError, match="one blank at a time"):
        split_blank(text)


def test_a_text_beyond_the_context_is_refused(tiny):
    with pytest.raises(ValueError, match="context of 160"):
        fill_blank_decoder(tiny, "the movie was great " * 50 + "[MASK].")


@pytest.mark.parametrize("text", ["[MASK] was great.", "[MASK]", "the 🎬 movie was [MASK] ✈ 정말", "great[MASK]"])
def test_a_blank_anywhere_and_any_unicode_give_finite_whole_sentence_scores(tiny, text):
    found = fill_blank_decoder(tiny, text, top_k=3, pool=POOL)
    assert found.candidates
    for c in found.candidates:
        ids = found.before_ids + list(c.ids) + found.after_ids
        assert c.score == pytest.approx(float(full_pass_logp(tiny, ids).sum()), abs=1e-4)
        glued = not text.split("[MASK]")[0] or not text.split("[MASK]")[0][-1].isspace()
        assert tiny.lm_tokenizer.decode([c.ids[0]])[:1].isalnum() == glued  # no space where none was typed
