"""Decoding batched across sessions (issue 55): every generation stepped together by the process's
scheduler gives the tokens, probabilities and attention rows of generating alone, for mixed prompt
lengths, greedy and seeded sampling, forced tokens and heads switched off, on each family of layers."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from transformer.core.config import ModelConfig
from transformer.core.decoder import DecoderLM, init_weights, lm_config
from transformer.core.layers import EncoderLayer
from transformer.lm.decode import Decoding, generate, step_alone
from transformer.lm.sampling import Sampling
from transformer.serving import AloneService, BatchingScheduler, batch_cache, batch_prompts
from transformer.serving import scheduler as scheduler_module
from transformer.serving.batch_cache import BatchCache
from transformer.serving.batch_step import batch_matches, batch_step

V = 60
MODERN = dict(positional="rotary", norm_style="rms", gated_ffn=True, activation="silu", qkv_bias=False,
              out_bias=False, ffn_bias=False)  # fmt: skip
GEMMA = dict(MODERN, num_kv_heads=1, local_layers=(0, 2), local_window=4, local_pe_base=10_000.0, pe_base=1e6,
             qk_norm=True, sublayer_post_norm=True, attention_head_dim=16)  # fmt: skip
FAMILIES = {
    "gpt2": {},  # learned positions, layer norm, biases
    "llama": dict(MODERN, num_kv_heads=2),  # rotary, RMSNorm, SwiGLU, grouped-query attention
    "gemma-like": GEMMA,  # local + global layers with their own rotary bases, one key/value head, wide heads
}


def _model(changes: dict) -> DecoderLM:
    if any(name not in ModelConfig.__dataclass_fields__ for name in changes):
        pytest.skip("this engine has no such layer options")
    torch.manual_seed(3)
    config = lm_config(V, d_model=32, num_heads=4, num_layers=3, d_ff=40, max_len=40, **changes)
    model = DecoderLM(config).eval()
    init_weights(model, 0.3)
    return model


def _requests(model: DecoderLM) -> list[dict]:
    """Mixed prompt lengths and settings: greedy, seeded samplings, a forced token, heads switched off."""
    off = torch.ones(len(model.layers), model.config.num_heads)
    off[0, 1] = 0
    off[-1] = 0  # a whole layer's heads off
    gen = torch.Generator().manual_seed(0)
    prompts = [torch.randint(3, V, (n,), generator=gen).tolist() for n in (1, 3, 8, 17, 5, 30)]
    settings = [
        dict(sampling=Sampling()),
        dict(sampling=Sampling(greedy=False, temperature=1.5, seed=7)),
        dict(sampling=Sampling(greedy=False, temperature=0.8, top_k=5, top_p=0.9, seed=1), head_mask=off),
        dict(sampling=Sampling(), forced={1: 4}),
        dict(sampling=Sampling(), head_mask=off, stop_at=None),
        dict(sampling=Sampling(greedy=False, seed=2), steps=20),  # 30 + 20 > 40: stops at the context
    ]
    return [dict(ids=ids, steps=s.pop("steps", 9), **s) for ids, s in zip(prompts, settings)]


def _decoding(model, request: dict) -> Decoding:
    return Decoding(model, request["ids"], request["steps"], request["sampling"], request.get("forced"),
                    request.get("head_mask"), request.get("stop_at"))  # fmt: skip


def _step_together(model, running: list[Decoding]) -> None:
    """One batched step of ``running``, their caches put side by side for it and given back after."""
    batch = BatchCache([d.cache for d in running])
    logits, rows = batch_step(model, [d.pending[0] for d in running], batch, [d.gate for d in running])
    for n, d in enumerate(running):
        d.cache = batch.row(n)
        d.take(logits[n], rows[n])


def _assert_same(alone, batched) -> None:
    assert batched.ids == alone.ids and batched.stopped == alone.stopped
    for a, b in zip(alone.steps, batched.steps, strict=True):
        assert a.token_id == b.token_id and a.forced == b.forced and a.kept == b.kept
        assert np.abs(a.top_probs - b.top_probs).max() <= 1e-5 and abs(a.chosen_prob - b.chosen_prob) <= 1e-5
        # the same likeliest tokens, each with its probability (two within rounding of each other may swap places)
        mine, theirs = (
            dict(zip(a.top_ids, zip(a.top_probs, a.top_filtered))),
            dict(zip(b.top_ids, zip(b.top_probs, b.top_filtered))),
        )
        for token in set(mine) & set(theirs):
            assert np.abs(np.subtract(mine[token], theirs[token])).max() <= 1e-5
        assert all(abs(mine[t][0] - a.top_probs[-1]) <= 1e-5 for t in set(mine) - set(theirs))
        assert a.attention.shape == b.attention.shape and np.abs(a.attention - b.attention).max() <= 1e-5


@pytest.mark.parametrize("family", FAMILIES.values(), ids=FAMILIES.keys())
def test_stepping_together_gives_what_each_gives_alone(family):
    model = _model(family)
    requests = _requests(model)
    alone = [generate(model, **r) for r in requests]
    decodings = [_decoding(model, r) for r in requests]
    for d in decodings:
        step_alone(d)  # the prompt, read alone
    while running := [d for d in decodings if not d.done]:
        _step_together(model, running)
    for a, d in zip(alone, decodings):
        _assert_same(a, d.result())
    assert alone[-1].stopped == "context" and alone[0].steps[-1].attention.shape == (3, 4, 9)


@pytest.mark.parametrize("headroom, spread", [(32, 64), (1, 0)])
def test_the_scheduler_batches_sessions_waiting_at_once_and_each_gets_its_own(headroom, spread, monkeypatch):
    """Generations join and leave the batch (its caches given back and put side by side again); with a
    headroom of 1 the batch's storage grows at every step, with no spread the lengths split the batch."""
    monkeypatch.setattr(batch_cache, "HEADROOM", headroom)
    monkeypatch.setattr(scheduler_module, "SPREAD", spread)
    model = _model(FAMILIES["llama"])
    requests = _requests(model)
    alone = [generate(model, **r) for r in requests]
    scheduler, results = BatchingScheduler(), {}

    def session(n: int) -> None:
        results[n] = scheduler.generate(_decoding(model, requests[n]))

    threads = [threading.Thread(target=session, args=(n,)) for n in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for n, a in enumerate(alone):
        _assert_same(a, results[n])
    assert scheduler.largest_batch >= 2 and scheduler.steps_run > 0
    again = scheduler.generate(_decoding(model, requests[0]))  # the worker sleeps between requests, then serves
    _assert_same(alone[0], again)
    assert AloneService().generate(_decoding(model, requests[3])).ids == alone[3].ids


def test_generations_of_very_different_lengths_are_not_padded_into_one_batch(monkeypatch):
    """A batch's caches are padded to its longest: one long prompt among short ones goes into a batch of its own."""
    monkeypatch.setattr(scheduler_module, "SPREAD", 0)
    model = _model({})
    jobs = [scheduler_module._Job(Decoding(model, list(range(3, 3 + n)), 5)) for n in (30, 3, 4, 10, 6, 2)]
    parts = BatchingScheduler(max_batch=3)._parts(jobs)
    assert [[scheduler_module._length(j.decoding) for j in part] for part in parts] == [[0, 0, 0], [0, 0, 0]]
    for job in jobs:
        job.decoding.read_prompt()
    parts = BatchingScheduler(max_batch=3)._parts(jobs)
    assert [[scheduler_module._length(j.decoding) for j in part] for part in parts] == [[1, 2], [3, 5], [9], [29]]


def test_a_bad_head_mask_is_refused_before_it_reaches_the_batch():
    model = _model({})
    with pytest.raises(ValueError, match="head_mask must have shape"):
        Decoding(model, [3, 4], 5, head_mask=torch.ones(2, 4))


class _Doubled(EncoderLayer):
    """A layer whose forward does more than its two sublayers (what a batched step cannot know)."""

    def forward(self, x, *args, **kwargs):
        out, weights = super().forward(x, *args, **kwargs)
        return 2 * out, weights


def test_a_model_the_batched_step_does_not_reproduce_is_stepped_alone():
    model = _model({})
    assert batch_matches(model)
    odd = _Doubled(model.config)
    odd.load_state_dict(model.layers[1].state_dict())
    model.layers[1] = odd.eval()
    assert not batch_matches(model)
    requests = _requests(model)[:3]
    alone = [generate(model, **r) for r in requests]
    scheduler, results = BatchingScheduler(), {}
    threads = [threading.Thread(target=lambda n=n: results.update({n: scheduler.generate(_decoding(model, requests[n]))}))
               for n in range(3)]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for n, a in enumerate(alone):
        _assert_same(a, results[n])
    assert scheduler.steps_run == 0


@pytest.mark.parametrize("family", FAMILIES.values(), ids=FAMILIES.keys())
def test_prompts_read_together_give_what_each_gives_alone(family, monkeypatch):
    """Prompts of mixed lengths and head masks read in shared passes (one too long for a pass, read alone; the
    rest in more than one pass), then stepped together: every generation as alone."""
    monkeypatch.setattr(batch_prompts, "PROMPT_CHUNK", 20)  # the 30-token prompt is read alone, in chunks
    monkeypatch.setattr(batch_prompts, "BATCH_PROMPT_TOKENS", 24)  # at most 24 padded tokens a pass
    model = _model(family)
    requests = _requests(model)
    alone = [generate(model, **r) for r in requests]
    decodings = [_decoding(model, r) for r in requests]
    groups = batch_prompts._groups([d for d in decodings if d.unread_prompt()])
    assert sorted([len(d.unread_prompt()) for d in g] for g in groups) == [[2], [4, 7], [16], [29]]
    batch_prompts.read_prompts(decodings)
    assert [d.cache.length if d.cache else 0 for d in decodings] == [len(r["ids"]) - 1 for r in requests]
    assert all(len(d.pending) == 1 for d in decodings)
    for d in decodings:
        if d.cache is None:
            step_alone(d)  # a one-token prompt: its first step makes the cache
    while running := [d for d in decodings if not d.done]:
        _step_together(model, running)
    for a, d in zip(alone, decodings):
        _assert_same(a, d.result())


def test_a_prompt_that_fails_with_others_is_read_alone_and_only_its_caller_gets_the_error(monkeypatch):
    model = _model(FAMILIES["llama"])
    requests = _requests(model)[1:4]
    alone = [generate(model, **r) for r in requests]

    def broken(decodings):
        raise RuntimeError("the shared pass failed")

    monkeypatch.setattr("transformer.serving.scheduler.read_prompts", broken)
    scheduler, results = BatchingScheduler(), {}
    threads = [threading.Thread(target=lambda n=n: results.update({n: scheduler.generate(_decoding(model, requests[n]))}))
               for n in range(3)]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for n, a in enumerate(alone):
        _assert_same(a, results[n])
