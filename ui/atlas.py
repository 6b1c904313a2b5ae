"""The head atlas: for any model of the app, each head's role scores on one input (and the
standard probes), computed once per (model, input) through the cached service (``ui.compute``).

Each family gives its parts (an encoder-decoder has three: encoder self-attention, decoder self-
attention, cross-attention) as :class:`AtlasPart`: the (L, H, T_q, T_k) weights, the tokens on
both axes and the (L, H) scores by name. The scores are the pure functions of
``transformer.head_roles`` (and the task packages' own: alignment, locality, induction).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from transformer import analyze
from transformer.analysis.head_roles import (
    ROLE_THRESHOLD,
    assign_roles,
    induction_score,
    previous_token_score,
    text_role_scores,
)
from transformer.analysis.lm_inputs import run_language_model
from transformer.core.attention import weights_buffer
from transformer.lm.induction import PROBE_BATCH, PROBE_PERIOD, probe_range, repeated_random_tokens
from transformer.translation import get_task
from transformer.translation.alignment import reference_alignment, sentence_scores
from transformer.vision.locality import locality_score

from .compute import computed
from .language_models import language_models, load_lm, prompt_of
from .models import bundled_models, load_shared
from .translation_models import TRANSLATION_MODELS
from .vision_models import analyze_vision, digit_test_set, get_vision, scene, test_scene_seed, vision_models

FAMILIES = ("classifier", "encoder-decoder", "vision", "language-model")


@dataclass(frozen=True)
class AtlasPart:
    """One attention of a model: weights (L, H, T_q, T_k), query and key tokens, scores name -> (L, H),
    roles (L, H) str and their strength (L, H)."""

    name: str
    weights: np.ndarray
    queries: list[str]
    keys: list[str]
    scores: dict[str, np.ndarray]
    roles: np.ndarray
    strength: np.ndarray


def _part(name, weights, queries, keys, scores, first: tuple[str, ...] = ()) -> AtlasPart:
    roles, strength = assign_roles(scores, first)
    return AtlasPart(name, np.asarray(weights, dtype=np.float32), list(queries), list(keys), scores, roles, strength)


def atlas_models() -> dict[str, str]:
    """Every bundled model the atlas can show: name -> family."""
    out = {name: "classifier" for name in bundled_models(("classifier",))}
    out |= {name: "encoder-decoder" for name in TRANSLATION_MODELS if name in bundled_models(("encoder-decoder",))}
    out |= {name: "vision" for name in vision_models() if not name.startswith("upload")}
    out |= {name: "language-model" for name in language_models()}
    return out


@computed("atlas-classifier")
def classifier_atlas(name: str, device: str, text: str) -> list[AtlasPart]:
    result = analyze(load_shared(name, device), [text])
    n = int(result.lengths[0])
    tokens = result.tokens[0]
    weights = result.attention[0, :, :, :n, :n]
    return [_part("encoder", weights, tokens, tokens, text_role_scores(weights, tokens, causal=False))]


@computed("atlas-translation")
def translation_atlas(name: str, device: str, text: str) -> list[AtlasPart]:
    """Encoder self-attention, decoder self-attention (causal) and cross-attention with the gold
    alignment score, on the greedy translation of ``text``."""
    result = analyze(load_shared(name, device), [text])
    n = int(result.lengths[0])
    source = result.tokens[0]
    target = result.decoder_tokens[0]
    m = len(target)
    enc = result.attention[0, :, :, :n, :n]
    dec = result.decoder_self_attention[0, :, :, :m, :m]
    cross = result.cross_attention[0, :, :, :m, :n]
    # row j reads target[j] and writes target[j + 1]: its gold source word is that of target[j + 1]
    alignment = reference_alignment(get_task(TRANSLATION_MODELS[name]).name, source, target[1:])
    cross_scores = {"alignment": sentence_scores(cross, alignment)}
    return [
        _part("encoder", enc, source, source, text_role_scores(enc, source, causal=False)),
        _part("decoder", dec, target, target, text_role_scores(dec, target, causal=True)),
        _part("cross", cross, target, source, cross_scores),
    ]


PROBE_SCORES = ("induction", "previous")  # what the atlas measures on its own probe, not on the typed text


@computed("atlas-lm-probe")
def lm_probe_scores(name: str, device: str) -> dict[str, np.ndarray]:
    """(L, H) induction and previous-token scores on the random repeated-token probe (the probe of
    ``transformer.lm.induction``: the start token, random ids, the same ids again), averaged over the
    probe's sequences: what a head does when there is something to do, whatever the typed text holds.
    The run keeps the next-token scores of the last position only (never tokens x vocabulary)."""
    loaded = load_lm(name, device)
    cfg = loaded.config
    first, end = probe_range(loaded.metrics, cfg.vocab_size)
    period = min(PROBE_PERIOD, (cfg.max_len - 1) // 2)
    start = cfg.bos_id if cfg.bos_id is not None else first
    ids = repeated_random_tokens(probe_batch(cfg), period, end, first, start).to(next(loaded.model.parameters()).device)
    buffer = weights_buffer(ids.shape[0], cfg.num_layers, cfg.num_heads, ids.shape[1], ids.shape[1], device=ids.device)
    with torch.no_grad():
        run_language_model(loaded.model, ids, torch.ones_like(ids, dtype=torch.bool), buffer)
    weights = buffer.cpu().numpy()  # (B, L, H, T, T)
    return {
        "induction": induction_score(weights, period, start=1).mean(axis=0),
        "previous": previous_token_score(weights).mean(axis=0),
    }


def lm_induction(name: str, device: str) -> np.ndarray:
    """(L, H) induction scores on the probe (:func:`lm_probe_scores`)."""
    return lm_probe_scores(name, device)["induction"]


LARGE_PROBE_BATCH = (
    4  # probe sequences for a model of more than SMALL_HEADS heads (SmolLM2: 12 s, not 50, on one CPU thread)
)
SMALL_HEADS = 64


def probe_batch(config) -> int:
    """Probe sequences the induction score averages: the usual 16 on the course-sized models, 4 on a
    model as large as SmolLM2 (30 layers x 9 heads, a 49,152-token output layer on every position)."""
    return PROBE_BATCH if config.num_layers * config.num_heads <= SMALL_HEADS else LARGE_PROBE_BATCH


@computed("atlas-lm")
def lm_atlas(name: str, device: str, text: str) -> list[AtlasPart]:
    loaded = load_lm(name, device)
    prompt = prompt_of(name, device, text)  # an imported model: its tokenizer's own tokens, nothing added
    ids, tokens = prompt.ids[: loaded.config.max_len], prompt.tokens[: loaded.config.max_len]
    model = loaded.model
    with torch.no_grad():
        out = model(torch.tensor([ids], device=next(model.parameters()).device), need_weights=True)
    weights = np.stack([w.weights[0].float().cpu().numpy() for w in out.attention])
    scores = text_role_scores(weights, tokens, causal=True) | lm_probe_scores(name, device)
    return [_part("decoder", weights, tokens, tokens, scores, PROBE_SCORES)]


def vision_image(name: str, device: str) -> np.ndarray:
    """The held-out picture the atlas uses: the first test digit, or the first test scene."""
    if get_vision(name, device).config.kind == "vision-segmenter":
        return scene(test_scene_seed(0)).image
    return digit_test_set()[0][0]


@computed("atlas-vision")
def vision_atlas(name: str, device: str) -> list[AtlasPart]:
    loaded = get_vision(name, device)
    cfg = loaded.config
    result = analyze_vision(name, device, vision_image(name, device)[None])
    weights = result.attention[0]
    tokens = list(result.tokens)
    class_token = tokens[0] == "[CLS]"
    grid = cfg.image_size // cfg.patch_size
    scores = text_role_scores(weights, tokens, causal=False)
    del scores["punctuation"]  # pictures have no punctuation
    scores["locality"] = locality_score(weights, grid, class_token)
    return [_part("encoder", weights, tokens, tokens, scores)]


def atlas_for(family: str, name: str, device: str, text: str) -> list[AtlasPart]:
    if family == "classifier":
        return classifier_atlas(name, device, text)
    if family == "encoder-decoder":
        return translation_atlas(name, device, text)
    if family == "language-model":
        return lm_atlas(name, device, text)
    return vision_atlas(name, device)


FOUND_ROLES = ("previous", "induction", "sink")  # the heads the atlas names for a language model
FOUND_PER_ROLE = 3


def found_heads(part: AtlasPart, roles: tuple[str, ...] = FOUND_ROLES, count: int = FOUND_PER_ROLE) -> dict:
    """For each of ``roles``: the ``count`` heads with the highest score for it, best first, as
    (layer, head, score) 0-based, counting only scores at or above the role threshold (a head may be
    named for another role in the grid: on a short text SmolLM2's induction heads also score ~1 as
    sinks); roles with no such head are left out."""
    out = {}
    for role in roles:
        if role not in part.scores:
            continue
        score = np.nan_to_num(np.asarray(part.scores[role], dtype=np.float64), nan=-1.0)
        order = np.argsort(-score, axis=None, kind="stable")
        hits = [np.unravel_index(i, score.shape) for i in order[:count] if score.flat[i] >= ROLE_THRESHOLD]
        if hits:
            out[role] = [(int(layer), int(head), float(score[layer, head])) for layer, head in hits]
    return out


ATLAS_WINDOW = 10  # layers of the role grid shown at once (two lines of text a cell need ~44 px a row)


def grid_windows(n_layers: int, size: int = ATLAS_WINDOW) -> list[tuple[int, int]]:
    """The role grid's layer windows (first, last; 1-based, inclusive): one for a model of up to 12 layers,
    else ``size`` layers each (30 layers: 1–10, 11–20, 21–30)."""
    if n_layers <= 12:
        return [(1, n_layers)]
    return [(first, min(first + size - 1, n_layers)) for first in range(1, n_layers + 1, size)]
