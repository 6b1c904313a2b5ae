"""Chat with a language model that has a chat template (SmolLM2-Instruct): the question through the
model's own template, the answer written token by token with the key/value cache until the end-of-turn
token, and, for each answer token, where the attention of the token that predicted it went in the
question (which words of the question the answer was built from).

No widgets here: :func:`chat_prompt` renders and tokenises, :func:`answer_tokens` yields the answer one
token at a time (the page streams it), :func:`question_attention` reduces a finished answer to what the
figure draws.

The template is the file's Jinja text, untrusted: ``transformer.hf.chat`` renders it in a bounded Jinja
sandbox inside the isolated reader process (a time and a memory limit), never in the server's interpreter.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from transformer.hf.chat import chat_texts, end_of_turn_id
from transformer.lm.cache import forward_cached
from transformer.lm.sampling import Sampling, choose, filtered_probabilities

MAX_ANSWER = 256  # answer tokens one question writes at most


@dataclass(frozen=True)
class ChatPrompt:
    """The rendered conversation, its ids, and the positions [start, end) of the question's own tokens."""

    text: str
    ids: tuple[int, ...]
    question: tuple[int, int]


def has_chat(loaded) -> bool:
    """True for a model whose file carries a chat template (a GGUF model's ``chat_template``)."""
    return bool(getattr(loaded, "chat_template", "")) and loaded.lm_tokenizer is not None


def chat_prompt(loaded, question: str) -> ChatPrompt:
    """``question`` as the model reads it in a chat: rendered through its template (``transformer.hf.chat``: a
    bounded sandbox in the isolated reader process; the question and an empty one in one child), tokenised as
    ``apply_chat_template`` does (the template writes every special token; the tokenizer adds none), the
    question's own tokens located by their characters.
    ValueError (ChatTemplateError) when the template refuses the question."""
    text, empty = chat_texts(loaded, [[{"role": "user", "content": question}], [{"role": "user", "content": ""}]])
    start = next((i for i, (a, b) in enumerate(zip(text, empty)) if a != b), min(len(text), len(empty)))
    end = start + len(question)
    encoding = loaded.lm_tokenizer.encode(text, add_special_tokens=False)
    inside = [i for i, (a, b) in enumerate(encoding.offsets) if a < end and b > start and b > a]
    span = (inside[0], inside[-1] + 1) if inside else (len(encoding.ids), len(encoding.ids))
    return ChatPrompt(text, tuple(encoding.ids), span)


def end_ids(loaded) -> frozenset[int]:
    """Tokens that end the assistant's turn: the model's end-of-turn token (``<|im_end|>``) and its end token."""
    found = {end_of_turn_id(loaded), loaded.config.eos_id, loaded.lm_tokenizer.token_to_id("<|endoftext|>")}
    return frozenset(i for i in found if i is not None)


@dataclass(frozen=True)
class AnswerToken:
    """One answer token: its id, its probability, and the attention row of the token that predicted it
    over the question's tokens, per layer averaged over the heads (L, T_question), and the share of that
    row (per layer) that went to the question at all (L,)."""

    token_id: int
    prob: float
    on_question: np.ndarray
    share: np.ndarray


@torch.no_grad()
def answer_tokens(
    model, prompt: ChatPrompt, sampling: Sampling, steps: int, stop: frozenset[int]
) -> Iterator[AnswerToken]:
    """The answer, one token at a time (the key/value cache holds the conversation so far); stops after
    an end token (yielded last), ``steps`` tokens or the context's end."""
    device = next(model.parameters()).device
    generator = None if sampling.picks_the_top else torch.Generator().manual_seed(sampling.seed)
    start, end = prompt.question
    pending, cache = list(prompt.ids), None
    budget = min(int(steps), MAX_ANSWER, model.config.max_len - len(prompt.ids))
    for _ in range(max(budget, 0)):
        out = forward_cached(model, torch.tensor([pending], device=device), cache, True)
        cache, logits = out.cache, out.logits[0, -1].float()
        rows = torch.stack([w[0, :, -1] for w in out.attention]).float().mean(1)  # (L, T): heads averaged
        token = choose(filtered_probabilities(logits, sampling), generator)
        prob = float(torch.softmax(logits.double(), -1)[token])
        on_question = rows[:, start:end].cpu().numpy()
        yield AnswerToken(int(token), prob, on_question, on_question.sum(-1))
        if token in stop:
            return
        pending = [int(token)]


def question_attention(tokens: list[AnswerToken], layers: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """For answer tokens (N), the attention over the question (N, T_question) averaged over the layers
    ``layers`` = (first, last) (1-based, inclusive), each row rescaled to sum to 1 over the question
    (which of its words, whatever share the question got), and that share (N,) before rescaling."""
    if not tokens:
        return np.zeros((0, 0), np.float32), np.zeros(0, np.float32)
    first, last = layers
    rows = np.stack([a.on_question[first - 1 : last].mean(0) for a in tokens])  # (N, T_q)
    share = rows.sum(-1)
    return rows / np.maximum(share[:, None], 1e-12), share
