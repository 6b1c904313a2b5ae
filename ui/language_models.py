"""The bundled decoder-only language models: loaded once and shared (``ui.models.load_shared``),
generation results kept small and cached per input and settings by the cached service (``ui.compute``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from transformer import LoadedModel
from transformer.lm.decode import generate, next_token_probs
from transformer.lm.model import KIND
from transformer.lm.sampling import Sampling
from transformer.lm.text import Prompt, encode_prompt, show_token

from .compute import computed
from .models import bundled_models, load_shared

DEFAULT_LM = "review-lm"
TOP = 20  # candidates kept per step: the bars and the force menu


def language_models() -> list[str]:
    """Bundled folders of kind ``language-model``, the default first."""
    return sorted(bundled_models((KIND,)), key=lambda n: n != DEFAULT_LM)


def load_lm(name: str, device: str) -> LoadedModel:
    return load_shared(name, device)


@dataclass(frozen=True)
class StepView:
    """One generated token as the page shows it: ``top`` (ids, model probability, probability after
    the sampling settings) of the most likely tokens, the chosen id, and the attention row of the
    predicting token per layer and head (L, H, T)."""

    position: int
    token_id: int
    forced: bool
    top_ids: np.ndarray
    top_probs: np.ndarray
    top_filtered: np.ndarray
    chosen_prob: float
    kept: int
    attention: np.ndarray


@dataclass(frozen=True)
class GenerationView:
    ids: list[int]
    prompt_length: int
    steps: list[StepView]
    stopped: str


def prompt_of(name: str, device: str, text: str) -> Prompt:
    """The prompt's ids and tokens, not cut (the page says when it is too long)."""
    return encode_prompt(load_lm(name, device).lm_tokenizer, text)


def token_text(name: str, device: str, token_id: int) -> str:
    return show_token(load_lm(name, device).lm_tokenizer, token_id)


def continuation(name: str, device: str, ids: list[int]) -> str:
    return load_lm(name, device).lm_tokenizer.decode(ids, skip_special_tokens=True)


def _gates(gates: tuple[tuple[float, ...], ...] | None) -> torch.Tensor | None:
    return None if gates is None else torch.tensor(gates, dtype=torch.float32)


@computed("lm-generation")
def run_generation(
    name: str,
    device: str,
    ids: tuple[int, ...],
    steps: int,
    sampling: Sampling,
    forced: tuple[tuple[int, int], ...] = (),
    gates: tuple[tuple[float, ...], ...] | None = None,
) -> GenerationView:
    """Generation with the cache, reduced to what the page draws (a few kB per step)."""
    model = load_lm(name, device).model
    out = generate(model, list(ids), steps, sampling, dict(forced), _gates(gates))
    views = []
    for step in out.steps:
        top = np.argsort(-step.probs, kind="stable")[:TOP]
        views.append(
            StepView(step.position, step.token_id, step.forced, top, step.probs[top].astype(np.float32),
                     step.filtered[top].astype(np.float32), float(step.probs[step.token_id]),
                     int((step.filtered > 0).sum()), step.attention.astype(np.float32))
        )  # fmt: skip
    return GenerationView(out.ids, out.prompt_length, views, out.stopped)


@computed("lm-prefix-attention")
def prefix_attention(name: str, device: str, ids: tuple[int, ...], gates=None) -> np.ndarray:
    """(L, H, T, T) masked self-attention of one pass over ``ids``."""
    model = load_lm(name, device).model
    dev = next(model.parameters()).device
    with torch.no_grad():
        out = model(torch.tensor([ids], device=dev), need_weights=True, head_mask=_gates_on(gates, dev))
    return np.stack([w.weights[0].float().cpu().numpy() for w in out.attention])


def _gates_on(gates, device):
    g = _gates(gates)
    return None if g is None else g.to(device)


@computed("lm-next-distribution")
def next_distribution(name: str, device: str, ids: tuple[int, ...], gates=None) -> np.ndarray:
    """(V,) float32 next-token probabilities after ``ids`` with the given heads on."""
    return next_token_probs(load_lm(name, device).model, list(ids), _gates(gates)).astype(np.float32)
