"""The residual views' memory is bounded by construction: the logit lens reads in chunks sized from the
vocabulary (the same numbers as the full (readings × positions × vocabulary) computation it replaced,
within 1e-6), and no path (the lens, the CLI's lens entries, who wrote the answer, switching heads off,
one head's attention row) allocates a positions × vocabulary tensor: on a model with a 2,000,000-token
vocabulary, in a child process, each path's peak resident memory (the kernel's high-water mark) stays far
below one positions × vocabulary tensor (512 MB), which the same measure sees when it is made."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from transformer.bundle import load_bundle
from transformer.core.bpe_text import encode_prompt
from transformer.core.decoder import DecoderLM, lm_config
from transformer.residual import logit_lens, trace
from transformer.residual.lens import chunk_rows
from transformer.residual.readout import chain, readout

ROOT = Path(__file__).resolve().parent.parent
PARITY = 1e-6


@torch.no_grad()
def full_lens(model, ids, target=None, top=5):
    """The lens as it was computed before streaming: every reading's whole distribution at once."""
    streams = torch.stack(trace(model, ids, target).streams)  # (L + 1, T, D)
    probs = torch.softmax(readout(chain(model), streams).float(), dim=-1)  # (L + 1, T, V)
    best = probs.topk(top, dim=-1)
    answer = probs[-1].argmax(-1)
    answer_prob = probs.gather(-1, answer.expand(probs.shape[0], -1)[..., None])
    rank = (probs > answer_prob).sum(-1)
    return best.indices.numpy(), best.values.numpy(), answer.numpy(), rank.numpy(), answer_prob[..., 0].numpy()


def assert_same(lens, full, positions=None) -> None:
    ids, probs, answer, rank, prob = full
    if positions is not None:
        ids, probs, answer, rank, prob = (
            ids[:, positions],
            probs[:, positions],
            answer[positions],
            rank[:, positions],
            prob[:, positions],
        )
    np.testing.assert_array_equal(lens.top_ids, ids)
    np.testing.assert_allclose(lens.top_probs, probs, atol=PARITY, rtol=0)
    np.testing.assert_array_equal(lens.answer, answer)
    np.testing.assert_array_equal(lens.answer_rank, rank)
    np.testing.assert_allclose(lens.answer_prob, prob, atol=PARITY, rtol=0)


def test_chunks_shrink_as_the_vocabulary_grows():
    assert chunk_rows(49_152, 48_000_000) == 97
    assert chunk_rows(262_144, 48_000_000) == 18
    assert chunk_rows(10_000_000, 1_000) == 1
    assert chunk_rows(49_152, 48_000_000) * 49_152 * 10 <= 48_000_000


@pytest.mark.parametrize("rows", [3, 10_000])  # 3 rows per chunk, and every row in one chunk
def test_streamed_lens_equals_the_full_computation_on_the_bundled_lm(rows):
    torch.set_num_threads(1)
    loaded = load_bundle(ROOT / "assets" / "models" / "review-lm")
    model = loaded.model.eval()
    ids = torch.tensor(
        [encode_prompt(loaded.lm_tokenizer, "the film was long but the actors were wonderful and", 64).ids]
    )
    full = full_lens(model, ids)
    budget = 10 * model.config.vocab_size * rows
    assert_same(logit_lens(model, ids, budget=budget), full)
    picked = [ids.shape[1] - 1, 0, 3]
    assert_same(logit_lens(model, ids, positions=picked, budget=budget), full, picked)


def test_streamed_lens_equals_the_full_computation_on_a_rotary_grouped_query_lm():
    torch.manual_seed(0)
    cfg = lm_config(3_001, d_model=32, num_heads=4, num_kv_heads=2, num_layers=3, d_ff=64, max_len=64,
                    positional="rotary", norm_style="rms", gated_ffn=True)  # fmt: skip
    model = DecoderLM(cfg).eval()
    ids = torch.randint(0, cfg.vocab_size, (1, 40))
    assert_same(logit_lens(model, ids, budget=10 * cfg.vocab_size * 7), full_lens(model, ids))


def test_streamed_lens_equals_the_full_computation_on_a_translator():
    torch.set_num_threads(1)
    loaded = load_bundle(ROOT / "assets" / "models" / "dates")
    model = loaded.model.eval()
    src = torch.tensor([loaded.text_encoder().encode("march 3 , 2021", 64).ids])
    tgt = model.greedy_decode(src, 20)
    assert_same(logit_lens(model, src, tgt, budget=10 * model.config.target_vocab_size * 2), full_lens(model, src, tgt))


def test_no_path_allocates_positions_by_vocabulary_on_a_huge_vocabulary():
    child = [sys.executable, "-m", "tests.residual_bounded_child"]
    done = subprocess.run(child, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    peaks = json.loads(done.stdout.strip().splitlines()[-1])
    assert peaks.pop("control") > 400, "the measure must see one positions x vocabulary tensor (512 MB)"
    for name, added_mb in peaks.items():
        assert added_mb < 300, (
            f"{name} added {added_mb:.0f} MB of peak memory (one positions x vocabulary tensor: 512 MB)"
        )


def test_switching_heads_off_is_capped_by_its_runs_with_a_message(monkeypatch):
    from transformer.residual import head_effects

    module = sys.modules["transformer.residual.contributions"]  # the package exports a function of that name

    smol_sized = DecoderLM(lm_config(50, d_model=36, num_heads=9, num_kv_heads=3, num_layers=30, d_ff=8, max_len=256))
    assert module.ablation_limit(smol_sized) == module.TOKEN_RUNS // 271 == 60
    monkeypatch.setattr(module, "TOKEN_RUNS", 100)
    small = DecoderLM(lm_config(50, d_model=16, num_heads=2, num_layers=2, d_ff=8, max_len=64)).eval()
    assert module.ablation_limit(small) == 100 // 5
    ids = torch.randint(0, 50, (1, 30))
    assert head_effects(small, ids, 19, 3).change.shape == (2, 2)  # a causal model reads up to the position
    with pytest.raises(ValueError, match="at most 20 tokens"):
        head_effects(small, ids, 20, 3)
