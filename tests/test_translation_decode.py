"""Step-by-step decoding: it equals one teacher-forced pass, masks hold, sampling is seeded,
forcing and switching heads off change what follows. A small untrained model keeps it fast;
the trained bundle is used where behaviour needs training."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from transformer.bundle import load_bundle
from transformer.core.config import ModelConfig
from transformer.core.loaded import LoadedModel
from transformer.core.model import EncoderDecoder
from transformer.translation import get_task
from transformer.translation.decode import DecodeOptions, decode, greedy_batch, teacher_forced
from transformer.translation.vocab import batch_tensors, build_vocabs, source_ids

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "assets" / "models" / "en-ko-order"


@pytest.fixture(scope="module")
def tiny() -> LoadedModel:
    source, target = build_vocabs(get_task("word-order"))
    config = ModelConfig(
        kind="encoder-decoder", vocab_size=len(source), target_vocab_size=len(target), d_model=32, num_heads=4,
        num_layers=2, num_decoder_layers=2, d_ff=64, max_len=40, dropout=0.0, scale_embedding=True,
    )  # fmt: skip
    torch.manual_seed(0)
    return LoadedModel(EncoderDecoder(config).eval(), config, source, target, "tiny")


def example_ids(loaded: LoadedModel, index: int = 0) -> list[int]:
    return source_ids(loaded.vocab, get_task("word-order").examples()[index])


def test_each_step_equals_the_teacher_forced_pass(tiny):
    src = example_ids(tiny)
    decoding = decode(tiny, src, DecodeOptions(max_new=9))
    assert len(decoding.steps) == 9 and len(decoding.ids) == 10
    full = teacher_forced(tiny, src, decoding.ids[:-1])
    probs = torch.softmax(full.logits[0], -1).numpy()
    for step in decoding.steps:
        t = step.t
        assert step.prefix == decoding.ids[: t + 1]
        self_rows = np.stack([w[0, :, t, : t + 1].numpy() for w in full.self_weights])
        cross_rows = np.stack([w[0, :, t].numpy() for w in full.cross_weights])
        np.testing.assert_allclose(step.self_row, self_rows, atol=1e-5)
        np.testing.assert_allclose(step.cross_row, cross_rows, atol=1e-5)
        np.testing.assert_allclose(step.probs, probs[t], atol=1e-5)
        assert step.predicted == int(probs[t].argmax()) == step.chosen


def test_decoder_self_attention_upper_triangle_is_exactly_zero_and_cross_rows_sum_to_one(tiny):
    pairs = get_task("word-order").generate(6, seed=2)
    src, tgt = batch_tensors(pairs, tiny.vocab, tiny.target_vocab)
    with torch.no_grad():
        out = tiny.model(src, tgt[:, :-1], need_weights=True)
    upper = torch.ones(tgt.shape[1] - 1, tgt.shape[1] - 1, dtype=torch.bool).triu(1)
    for record in out.decoder_self:
        assert (record.weights[..., upper] == 0).all()
    real = (src != tiny.config.pad_id)[:, None, None, :]  # (B, 1, 1, T_s)
    assert (~real).any(), "the batch should hold padded sources"
    for record in out.cross:
        w = record.weights
        assert (w.masked_select(~real.expand_as(w)) == 0).all()
        torch.testing.assert_close((w * real).sum(-1), torch.ones(w.shape[:-1]), atol=1e-5, rtol=0)


def test_sampling_is_seeded_and_temperature_flattens(tiny):
    src = example_ids(tiny, 1)
    runs = [decode(tiny, src, DecodeOptions("sample", 1.5, seed, max_new=8)).ids for seed in (3, 3, 4)]
    assert runs[0] == runs[1] and runs[0] != runs[2]
    cold = decode(tiny, src, DecodeOptions(temperature=0.5, max_new=1)).steps[0].probs
    hot = decode(tiny, src, DecodeOptions(temperature=2.0, max_new=1)).steps[0].probs
    assert cold.max() > hot.max() and cold.argmax() == hot.argmax()
    with pytest.raises(ValueError):
        decode(tiny, src, DecodeOptions(temperature=0.0))


def test_forced_and_teacher_tokens_are_written(tiny):
    src = example_ids(tiny)
    target = tiny.target_vocab
    forced_id = target.token_to_id("곰")
    forced = decode(tiny, src, DecodeOptions(forced={2: forced_id}, max_new=6))
    assert forced.ids[3] == forced_id and forced.steps[2].how == "forced"
    teacher = tuple(target.token_to_id(w) for w in get_task("word-order").examples()[0].target)
    taught = decode(tiny, src, DecodeOptions(teacher=teacher, max_new=3))
    assert tuple(taught.ids[1 : len(teacher) + 1]) == teacher
    assert {s.how for s in taught.steps[: len(teacher)]} == {"teacher"}


def test_heads_off_gates(tiny):
    src = example_ids(tiny)
    ones = tuple((1.0,) * 4 for _ in range(2))
    plain = decode(tiny, src, DecodeOptions(max_new=4))
    gated = decode(tiny, src, DecodeOptions(cross_gates=ones, max_new=4))
    np.testing.assert_allclose(plain.steps[-1].probs, gated.steps[-1].probs, atol=1e-6)
    off = decode(tiny, src, DecodeOptions(cross_gates=((1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)), max_new=4))
    assert np.abs(off.steps[0].probs - plain.steps[0].probs).max() > 1e-4


def test_batched_greedy_matches_one_at_a_time(tiny):
    pairs = get_task("word-order").generate(5, seed=9)
    src, _ = batch_tensors(pairs, tiny.vocab, tiny.target_vocab)
    batch = greedy_batch(tiny.model, src, 6)
    for row, pair in enumerate(pairs):
        single = decode(tiny, source_ids(tiny.vocab, pair), DecodeOptions(max_new=6)).ids
        assert batch[row, : len(single)].tolist() == single


@pytest.fixture(scope="module")
def trained() -> LoadedModel:
    if not BUNDLE.is_dir():
        pytest.fail(f"the bundled model {BUNDLE} is missing")
    return load_bundle(BUNDLE)


def test_trained_model_translates_the_example_and_forcing_changes_the_particle(trained):
    pair = get_task("word-order").examples()[0]  # the red cat reads a big letter at home today
    target = trained.target_vocab
    src = source_ids(trained.vocab, pair)
    plain = decode(trained, src)
    assert [target.id_to_token(i) for i in plain.output_ids] == [*pair.target, "<eos>"]
    # force a noun with a final consonant where 고양이 (none) was: the particle after it must follow
    forced = decode(trained, src, DecodeOptions(forced={2: target.token_to_id("곰")}))
    words = [target.id_to_token(i) for i in forced.output_ids]
    assert words[2] == "곰" and words[3] == "은" and pair.target[3] == "는"
    assert words[:2] == list(pair.target[:2])


def test_core_analyze_reads_both_bundles_greedy_and_teacher_forced(trained):
    from transformer.analysis.analyze import analyze

    pair = get_task("word-order").examples()[0]
    result = analyze(trained, [pair.text])
    assert result.decoder_tokens[0] == ["<bos>", *pair.target, "<eos>"]
    assert result.cross_attention.shape == (1, 2, 4, len(pair.target) + 2, len(pair.source))
    dates = load_bundle(ROOT / "assets" / "models" / "dates")
    forced = analyze(dates, ["wednesday the 9th of may 2018"], targets=["2018-05-09"])
    assert forced.decoder_tokens[0] == ["<bos>", *"2018-05-09"]  # the character-level target tokenizer
    assert analyze(dates, ["july 20 , 1969"]).decoder_tokens[0] == ["<bos>", *"1969-07-20", "<eos>"]


def test_trained_model_without_cross_attention_cannot_see_its_source(trained):
    examples = get_task("word-order").examples()[:2]
    all_off = ((0.0,) * 4, (0.0,) * 4)
    outputs = [decode(trained, source_ids(trained.vocab, p), DecodeOptions(cross_gates=all_off)).ids for p in examples]
    assert outputs[0] == outputs[1]  # the same sentence whatever the input
    plain = decode(trained, source_ids(trained.vocab, examples[0])).ids
    assert outputs[0] != plain


def test_gated_decoder_equals_the_core_decoder(tiny):
    from transformer.translation.decode import run_decoder

    pairs = get_task("word-order").generate(4, seed=4)
    src, tgt = batch_tensors(pairs, tiny.vocab, tiny.target_vocab)
    with torch.no_grad():
        core = tiny.model(src, tgt, need_weights=True)
        ours = run_decoder(tiny.model, tgt, core.encoder.hidden, src != tiny.config.pad_id)
    torch.testing.assert_close(ours.logits, core.logits, atol=1e-5, rtol=0)
    for mine, theirs in zip(ours.cross_weights, core.cross):
        torch.testing.assert_close(mine, theirs.weights, atol=1e-6, rtol=0)


def uncached_steps(loaded: LoadedModel, src_ids: list[int], ids: list[int], gates=None):
    """The reference the cache is held to: for each prefix ids[: t + 1], the whole decoder re-run
    over it (the memory's keys and values projected again), its last row taken."""
    from transformer.translation.decode import run_decoder

    src = torch.tensor([src_ids])
    gate = None if gates is None else torch.tensor(gates)
    with torch.no_grad():
        memory = loaded.model.encoder(src).hidden
        for t in range(len(ids) - 1):
            out = run_decoder(loaded.model, torch.tensor([ids[: t + 1]]), memory, src != loaded.config.pad_id, gate)
            yield (
                torch.softmax(out.logits[0, -1], -1).numpy(),
                np.stack([w[0, :, -1].numpy() for w in out.self_weights]),
                np.stack([w[0, :, -1].numpy() for w in out.cross_weights]),
            )


@pytest.mark.parametrize("options", [DecodeOptions(max_new=12), DecodeOptions(strategy="sample", seed=3, max_new=12),
                                     DecodeOptions(cross_gates=((1.0, 0.0, 1.0, 1.0), (0.0, 1.0, 1.0, 1.0)), max_new=8)])  # fmt: skip
def test_cached_decoding_equals_re_running_the_prefix(tiny, options):
    src = example_ids(tiny, 1)
    cached = decode(tiny, src, options)
    assert len(cached.steps) == options.max_new
    reference = uncached_steps(tiny, src, cached.ids, options.cross_gates)
    for step, (probs, self_row, cross_row) in zip(cached.steps, reference, strict=True):
        np.testing.assert_allclose(step.probs, probs, atol=1e-5)
        np.testing.assert_allclose(step.self_row, self_row, atol=1e-5)
        np.testing.assert_allclose(step.cross_row, cross_row, atol=1e-5)
        if options.strategy == "greedy":
            assert step.chosen == int(probs.argmax())


def test_cached_greedy_on_the_trained_models_gives_the_uncached_tokens(trained):
    dates = load_bundle(ROOT / "assets" / "models" / "dates")
    for loaded, pairs in ((trained, get_task("word-order").examples()), (dates, get_task("dates").examples())):
        for pair in pairs[:3]:
            src = source_ids(loaded.vocab, pair)
            ids = decode(loaded, src).ids
            # the uncached greedy choice at every step is the token the cached decoding appended
            chosen = [int(probs.argmax()) for probs, _, _ in uncached_steps(loaded, src, ids)]
            assert chosen == ids[1:]
            assert loaded.model.greedy_decode(torch.tensor([src]), len(ids))[0].tolist() == ids


def test_batched_cached_greedy_keeps_each_rows_padding_blocked(tiny):
    """Rows that finish early get <pad> appended; the cache keeps those keys blocked for later steps."""
    pairs = get_task("word-order").generate(6, seed=11)
    src, _ = batch_tensors(pairs, tiny.vocab, tiny.target_vocab)
    cache = tiny.model.decoder.new_cache()
    keep = src != tiny.config.pad_id
    tgt = torch.tensor([[2, 5, 1, 1], [2, 6, 7, 1]] * 3)  # <bos> 2, <pad> 1
    with torch.no_grad():
        memory = tiny.model.encoder(src).hidden
        full, _, _ = tiny.model.decoder(tgt, memory, keep)
        parts = [tiny.model.decoder(tgt[:, i : i + 1], memory, keep, cache=cache)[0] for i in range(4)]
    torch.testing.assert_close(torch.cat(parts, 1), full, atol=1e-5, rtol=0)
