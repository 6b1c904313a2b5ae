"""The Classifier page's computations, through the cached service (``ui.compute``): keyed by the model,
device, length limit and the inputs, so that reruns caused by other widgets cost nothing, and each run
holds an analysis slot."""

from __future__ import annotations

from transformer.analysis.ablation import head_effects, head_mask, masked_probabilities
from transformer.text.attribution import attribute, compare, sentence_ids

from .compute import compute


def cached(kind: str, selection, key: tuple, fn):
    """``fn()`` from the cached service by the model, device, length limit and ``key``."""
    return compute(kind, (selection.device, selection.max_len, *key), fn, model=selection.model_key)


def sentence(selection, loaded, text: str):
    """(the model's reading of ``text``, its ids (1, T)) cut at the sidebar's maximum length."""
    return cached("sentence-ids", selection, (text,), lambda: sentence_ids(loaded, text, selection.max_len))


def token_count(selection, loaded, text: str) -> int:
    """Tokens the model reads of ``text`` (cut at the sidebar's maximum length)."""
    return int(sentence(selection, loaded, text)[1].shape[-1])


def batch(selection, lines: list[str], run):
    """Every line's prediction: ``run()`` (which may draw a progress bar) once per model and lines."""
    return cached("predict-batch", selection, tuple(lines), run)


def attribution(selection, loaded, text: str, options: dict):
    """Rollout, gradient × input and integrated gradients of one sentence (``options``: attribute's)."""
    run = lambda: attribute(loaded, text, max_len=selection.max_len, **options)  # noqa: E731
    return cached("attribution", selection, (text, tuple(options.items())), run)


def comparison(selection, loaded, text_a: str, text_b: str, options: dict):
    """Both sentences explained for the same class, tokens aligned."""
    run = lambda: compare(loaded, text_a, text_b, max_len=selection.max_len, **options)  # noqa: E731
    return cached("compare", selection, (text_a, text_b, tuple(options.items())), run)


def switched_off(selection, loaded, text: str, attr, heads: list, layers: list):
    """The raw probabilities of ``text`` with ``heads`` ((layer, head)) and ``layers`` switched off (0-based);
    with nothing off, the explanation's own (not a second pass whose last digit may differ)."""
    if not heads and not layers:
        return attr.probabilities
    cfg, ids = loaded.config, sentence(selection, loaded, text)[1]
    mask = head_mask(cfg.num_layers, cfg.num_heads, heads, layers)
    key = (text, tuple(heads), tuple(layers))
    return cached("heads-off", selection, key, lambda: masked_probabilities(loaded.model, ids, mask))[0]


def head_effects_of(selection, loaded, text: str, target: int):
    """p(target) with each head, and each layer, switched off alone."""
    ids = sentence(selection, loaded, text)[1]
    return cached("head-effects", selection, (text, target), lambda: head_effects(loaded.model, ids, target))
