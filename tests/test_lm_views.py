"""The pure functions behind Generate, the head atlas and the residual page on a deep language model:
the chosen token's bar, layer windows, the heads the atlas names, where the lens's answer settles, who
wrote a logit, the chat's question span and its answer-to-question attention (issues 48 and 50)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer.lm.decode import Step
from transformer.residual.contributions import Contributions
from ui.atlas import AtlasPart, found_heads, grid_windows
from ui.chat import AnswerToken, question_attention
from ui.continuation import bars_with_chosen, copy_rows, layer_windows
from ui.language_models import PRETRAINED_LM
from ui.models import MODELS_DIR
from ui.residual import settles_at, top_writers

FOLDER = MODELS_DIR / PRETRAINED_LM


def step(token_id: int, rank: int) -> Step:
    top = np.arange(20)
    probs = np.linspace(0.3, 0.01, 20).astype(np.float32)
    return Step(5, token_id, top, probs, probs, chosen_prob=0.007, chosen_filtered=0.004, chosen_rank=rank, kept=400,
                attention=np.zeros((1, 1, 5)), forced=False)  # fmt: skip


def test_the_chosen_token_is_among_the_bars_even_outside_the_top_ten():
    bars = bars_with_chosen(step(57, 56), 10, sampling=True)
    assert len(bars.ids) == 11 and bars.ids[bars.chosen] == 57
    assert bars.ranks[-1] == 57 and bars.probs[-1] == pytest.approx(0.007) and bars.filtered[-1] == pytest.approx(0.004)
    inside = bars_with_chosen(step(3, 3), 10, sampling=False)
    assert (
        len(inside.ids) == 10 and inside.chosen == 3 and inside.filtered is None and inside.ranks == list(range(1, 11))
    )


def test_layer_windows_keep_every_figure_readable():
    assert layer_windows(2) == [(1, 2)]
    assert layer_windows(30)[0] == (1, 4) and layer_windows(30)[-1] == (29, 30)
    assert grid_windows(12) == [(1, 12)]
    assert grid_windows(30) == [(1, 10), (11, 20), (21, 30)]


def test_copy_rows_mark_copies_and_induction():
    attention = np.zeros((2, 1, 4))
    attention[0, 0, 1] = attention[1, 0, 2] = 1.0
    rows = copy_rows(attention, [7, 8, 9, 8], 9, range(2))  # layer 1 reads 8 (the token after it is 9)
    assert rows == [(0, 0, 1, 1.0, "next"), (1, 0, 2, 1.0, "same")]
    assert copy_rows(attention, [7, 8, 9, 8], 9, range(1, 2)) == [(1, 0, 2, 1.0, "same")]


def test_atlas_names_the_strongest_heads_above_the_threshold():
    scores = {"induction": np.array([[0.1, 0.9], [0.5, 0.3]]), "sink": np.array([[0.99, 0.2], [0.1, 0.1]])}
    roles = np.array([["sink", "sink"], ["induction", "mixed"]], dtype=object)
    part = AtlasPart("decoder", np.zeros((2, 2, 1, 1)), ["a"], ["a"], scores, roles, np.zeros((2, 2)))
    found = found_heads(part, ("induction", "sink", "previous"), 3)
    assert found == {"induction": [(0, 1, 0.9), (1, 0, 0.5)], "sink": [(0, 0, 0.99)]}


def test_where_the_answer_settles():
    assert settles_at(np.array([5, 0, 3, 1, 0])) == 4
    assert settles_at(np.array([5, 0, 0, 0])) == 1
    assert settles_at(np.array([0, 0])) == 0
    assert settles_at(np.array([40, 8, 2, 0]), within=10) == 1
    assert settles_at(np.array([], dtype=int)) is None


def test_top_writers_are_the_largest_positive_shares():
    c = Contributions(3, 11, ["embedding", "head", "head", "ffn"], np.array([-1, 0, 0, 0]), np.array([-1, 0, 1, -1]),
                      np.array([0.5, -2.0, 3.0, 1.0]), 2.5, False)  # fmt: skip
    assert top_writers(c, 3) == [("head", 0, 1, 3.0), ("ffn", 0, -1, 1.0), ("embedding", -1, -1, 0.5)]


def test_answer_attention_rows_sum_to_one_over_the_question():
    tokens = [AnswerToken(5, 0.9, np.array([[0.1, 0.3], [0.2, 0.2]]), np.array([0.4, 0.4]))]
    rows, share = question_attention(tokens, (1, 2))
    np.testing.assert_allclose(rows, [[0.3 / 0.8, 0.5 / 0.8]])
    np.testing.assert_allclose(share, [0.4])
    rows, _ = question_attention(tokens, (2, 2))
    np.testing.assert_allclose(rows, [[0.5, 0.5]])


@pytest.mark.skipif(not any(FOLDER.glob("*.gguf")), reason="SmolLM2's GGUF file is not bundled here")
def test_smollm2_chat_prompt_is_the_reference_ids_and_finds_the_question():
    from transformer.hf.chat import chat_ids
    from transformer.lm.sampling import Sampling
    from transformer.loader import load_model
    from ui.chat import answer_tokens, chat_prompt, end_ids

    torch.set_num_threads(1)
    loaded = load_model(FOLDER)
    prompt = chat_prompt(loaded, "What is the capital of Korea?")
    assert list(prompt.ids) == chat_ids(loaded, [{"role": "user", "content": "What is the capital of Korea?"}])
    start, end = prompt.question
    assert loaded.lm_tokenizer.decode(list(prompt.ids[start:end])) == "What is the capital of Korea?"
    answer = list(answer_tokens(loaded.model, prompt, Sampling(), 30, end_ids(loaded)))
    assert (
        loaded.lm_tokenizer.decode([a.token_id for a in answer], skip_special_tokens=True)
        == "The capital of Korea is Seoul."
    )
    assert answer[-1].token_id == loaded.lm_tokenizer.token_to_id("<|im_end|>")
    assert all(a.on_question.shape == (30, end - start) for a in answer)
    with torch.no_grad():  # the cached answer is what full passes give
        ids = list(prompt.ids) + [a.token_id for a in answer[:-1]]
        logits = loaded.model(torch.tensor([ids])).logits[0, len(prompt.ids) - 1 :]
    assert logits.argmax(-1).tolist() == [a.token_id for a in answer]
