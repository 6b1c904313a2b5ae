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
from transformer.analysis.head_roles import assign_roles, text_role_scores
from transformer.lm.induction import head_induction_scores, probe_range
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


def _part(name, weights, queries, keys, scores) -> AtlasPart:
    roles, strength = assign_roles(scores)
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


@computed("atlas-lm-induction")
def lm_induction(name: str, device: str) -> np.ndarray:
    """(L, H) induction scores on the random repeated-token probe (the same probe as training)."""
    loaded = load_lm(name, device)
    first, end = probe_range(loaded.metrics, loaded.config.vocab_size)
    return head_induction_scores(loaded.model, first_id=first, end_id=end)


@computed("atlas-lm")
def lm_atlas(name: str, device: str, text: str) -> list[AtlasPart]:
    loaded = load_lm(name, device)
    prompt = prompt_of(name, device, text)  # an imported model: its tokenizer's own tokens, nothing added
    ids, tokens = prompt.ids[: loaded.config.max_len], prompt.tokens[: loaded.config.max_len]
    model = loaded.model
    with torch.no_grad():
        out = model(torch.tensor([ids], device=next(model.parameters()).device), need_weights=True)
    weights = np.stack([w.weights[0].float().cpu().numpy() for w in out.attention])
    scores = text_role_scores(weights, tokens, causal=True)
    scores["induction"] = lm_induction(name, device)
    return [_part("decoder", weights, tokens, tokens, scores)]


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
