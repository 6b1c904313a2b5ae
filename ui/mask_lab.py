"""What the Masks page computes before it draws: the batch it pads, the masks it offers, the cells a user
switched, the five stages' figures and the worked example's numbers. Pure functions (numpy and the core's
mask functions in, arrays, figures and texts out); pages/masks.py only lays them out."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import torch

from transformer.core.masks import decoder_self_mask, look_ahead_mask, padding_mask
from transformer.core.tokenizer import basic_english
from ui.i18n import translate

from .figures import masks as mask_figures
from .figures import stepper

# added to a single sentence so that padding shows, in the language the model reads
PADDING_EXAMPLES = {"en": ("I loved this movie!", "Boring."), "ko": ("정말 좋았어요!", "지루함.")}
MAX_BATCH = 6
PRESETS = ("own", "none", "look-ahead", "both")
TWO_PER_ROW_UP_TO = 6  # tokens: stage figures side by side; longer inputs get the page's width each


@dataclass(frozen=True)
class Batch:
    """lines: the sentences padded together; wordless: 1-based numbers of the lines left out for having no
    words; cut: how many lines there were before the batch was cut to MAX_BATCH (0 when it was not)."""

    lines: list[str]
    wordless: list[int]
    cut: int


def batch_of(lines: list[str], add_examples: bool, korean: bool) -> Batch:
    """The batch for typed ``lines``: two shorter examples added to a single sentence when ``add_examples``
    (Korean ones for a model that reads Korean), lines with no words left out, at most MAX_BATCH kept."""
    if len(lines) == 1 and add_examples:
        lines = lines + list(PADDING_EXAMPLES["ko" if korean else "en"])
    wordless = [n + 1 for n, line in enumerate(lines) if not basic_english(line)]
    lines = [line for line in lines if basic_english(line)]
    cut = len(lines) if len(lines) > MAX_BATCH else 0
    return Batch(lines[:MAX_BATCH], wordless, cut)


def batch_tokens(tokens: list[list[str]], length: int, pad: str = "<pad>") -> list[list[str]]:
    """Every sentence's tokens padded to ``length`` with ``<pad>``, as the model sees the batch."""
    return [toks + [pad] * (length - len(toks)) for toks in tokens]


def three_masks(ids: np.ndarray, pad_id: int) -> dict[str, np.ndarray]:
    """The padding mask, the look-ahead mask and their combination (T, T) bool for one sequence of ids (T,)."""
    row = torch.from_numpy(ids[None])  # (1, T)
    return {
        "padding": padding_mask(row, pad_id)[0, 0].numpy(),
        "look-ahead": look_ahead_mask(ids.shape[0]).numpy(),
        "both": decoder_self_mask(row, pad_id)[0, 0].numpy(),
    }


def preset_mask(preset: str, ids: np.ndarray, pad_id: int) -> np.ndarray:
    """(T, T) bool for a preset name of PRESETS: the model's own (padding), none, look-ahead or both."""
    if preset == "none":
        return np.ones((ids.shape[0], ids.shape[0]), dtype=bool)
    return three_masks(ids, pad_id)["padding" if preset == "own" else preset].copy()


def switched(base: np.ndarray, cells: list[int]) -> np.ndarray:
    """A copy of ``base`` (T, T) with each cell (numbered row * T + column) switched (open <-> blocked)."""
    edited = base.copy()
    length = base.shape[0]
    for cell in cells:
        edited[cell // length, cell % length] = not edited[cell // length, cell % length]
    return edited


def flip_cell(chosen: list[int], cell: tuple[int, int], length: int) -> list[int]:
    """The switched cells after a click on ``cell`` (query, key): it joins them, or leaves them if it was in."""
    index = cell[0] * length + cell[1]
    return [c for c in chosen if c != index] if index in chosen else [*chosen, index]


def cell_text(cell: int, base: np.ndarray, plain: list[str], states: dict[bool, str]) -> str:
    """'query → key  (open → blocked)' for a cell number of ``base`` (T, T); ``states``: True/False -> word."""
    q, k = divmod(cell, base.shape[0])
    return f"{plain[q]} → {plain[k]}  ({states[bool(base[q, k])]} → {states[not base[q, k]]})"


def token_ids(tokens: list[str], vocab) -> np.ndarray:
    """(T,) int64 ids of ``tokens`` in ``vocab`` (a decoder's target, read back from its tokens)."""
    return np.array([vocab.token_to_id(tok) for tok in tokens], dtype=np.int64)


@torch.no_grad()
def own_weights(model, ids: torch.Tensor, layer: int, head: int) -> np.ndarray:
    """(T, T) the weights the model's own forward gives one head (0-based layer and head) on ids (1, T)."""
    return model(ids, need_weights=True).attention[layer].weights[0, head].float().cpu().numpy()


def finite(steps) -> bool:
    """Whether a head's numbers (q, k, v and the weights) are all finite."""
    return all(np.isfinite(a).all() for a in (steps.q, steps.k, steps.v, steps.weights))


def stage_figures(steps, labels: list[str], prefix: str, lang: str) -> list[go.Figure]:
    """The five stages (scores, scaled, masked, weights, output) of one head's steps as figures, sized two
    per row for short inputs and one per row for longer ones (the output always gets a row of its own)."""
    blocked, dims = ~steps.mask, [str(i) for i in range(steps.d_k)]
    width = mask_figures.HALF_WIDTH_PX if len(labels) <= TWO_PER_ROW_UP_TO else mask_figures.FULL_WIDTH_PX
    numbers = len(labels) <= mask_figures.NUMBERS_UP_TO
    common = dict(numbers=numbers, width_px=width, lang=lang)
    title = lambda key, **fields: translate(key, lang, **fields)  # noqa: E731
    fill = mask_figures.fill_text(steps.fill)
    return [
        stepper.stage_heatmap(steps.scores, labels, labels, title("masks.stage_scores"), f"{prefix}-scores", **common),
        stepper.stage_heatmap(steps.scaled, labels, labels, title("masks.stage_scaled", root=f"{np.sqrt(steps.d_k):.2f}"),
                              f"{prefix}-scaled", **common),
        stepper.stage_heatmap(steps.masked, labels, labels, title("masks.stage_masked", fill=fill), f"{prefix}-masked",
                              blocked=blocked, **common),
        stepper.stage_heatmap(steps.weights, labels, labels, title("masks.stage_weights"), f"{prefix}-weights",
                              blocked=blocked, weights=True, **common),
        stepper.stage_heatmap(steps.output, labels, dims, title("masks.stage_output"), f"{prefix}-output",
                              numbers=numbers and steps.d_k <= 24, width_px=mask_figures.FULL_WIDTH_PX, lang=lang),
    ]  # fmt: skip


def qkv_figures(steps, labels: list[str], prefix: str, lang: str) -> list[go.Figure]:
    """The head's queries, keys and values (T, d_k) as three figures a third of the page wide."""
    dims, numbers = [str(i) for i in range(steps.d_k)], len(labels) <= mask_figures.NUMBERS_UP_TO and steps.d_k <= 16
    return [
        stepper.stage_heatmap(matrix, labels, dims, name, f"{prefix}-{name.lower()}", numbers=numbers,
                              width_px=mask_figures.THIRD_WIDTH_PX, lang=lang)
        for name, matrix in zip("QKV", (steps.q, steps.k, steps.v))
    ]  # fmt: skip


def worked_fields(steps, query: int, md: list[str]) -> dict | None:
    """The worked example's numbers for ``query`` (the key it weighs most, its score before and after
    scaling, the weights' total); None when every key of that query is blocked."""
    weights = steps.weights[query]
    if not weights.any():
        return None
    top = int(np.argmax(weights))
    return dict(query=md[query], key=md[top], score=f"{steps.scores[query, top]:.2f}", d_k=steps.d_k,
                scaled=f"{steps.scaled[query, top]:.2f}", total=f"{weights.sum():.2f}", weight=f"{weights[top]:.2f}")  # fmt: skip
