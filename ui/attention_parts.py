"""The Attention page's data, apart from its layout: the parts of one input's attention (encoder self;
decoder self, cross and all of them at once for encoder-decoders), the matrix a view asks for, the
head grid kept per input, the layer windows of a deep model's grid and the NPZ download."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transformer import AnalysisResult
from transformer.analysis.rollout import attention_rollout

from .compute import compute
from .downloads import analysis_npz
from .figure_cache import shared_figures
from .figures import attention as attention_figures
from .i18n import current_lang, t
from .models import Selection
from .presenter import figure_font_scale

figs = shared_figures(attention_figures)  # figures built once for every session with the same inputs


@dataclass(frozen=True)
class Part:
    """One kind of attention of one input: weights (L, H, T_q, T_k) and the tokens on each axis."""

    weights: np.ndarray
    queries: list[str]
    keys: list[str]

    @property
    def square(self) -> bool:
        return self.queries is self.keys


def part_names(result: AnalysisResult) -> list[str]:
    """'encoder' for every model; 'decoder', 'cross' and (equal layer and head counts) 'all' for encoder-decoders."""
    if result.cross_attention is None or not result.decoder_tokens:
        return ["encoder"]
    same_grid = result.attention.shape[1:3] == result.decoder_self_attention.shape[1:3]
    return ["encoder", "decoder", "cross"] + (["all"] if same_grid else [])


def attention_part(result: AnalysisResult, index: int, name: str) -> Part:
    """One of ``part_names(result)`` for input ``index``: only that part is built (the fragment builds
    it on every rerun, and 'all' copies every head's blocks)."""
    weights = result.input_attention(index)
    source, target = weights.source, weights.target
    if name == "encoder":
        return Part(weights.encoder, source, source)
    if name == "decoder":
        return Part(weights.decoder_self, target, target)
    if name == "cross":
        return Part(weights.cross, target, source)
    enc, cross, dec = weights.encoder, weights.cross, weights.decoder_self
    n, m = len(source), len(target)
    both = source + [f"→{tok}" for tok in target]
    blocks = np.zeros((*enc.shape[:2], n + m, n + m), dtype=np.float32)
    for layer in range(enc.shape[0]):
        for head in range(enc.shape[1]):
            blocks[layer, head] = figs.encoder_decoder_blocks(enc[layer, head], cross[layer, head], dec[layer, head])
    return Part(blocks, both, both)


def chosen_matrix(attn: np.ndarray, view: str, layer: int, head: int) -> tuple[np.ndarray, str]:
    """The (T_q, T_k) weights the view asks for, and a title for them."""
    if view == "mean":
        return attn[layer].mean(axis=0), t("attention.title_mean", layer=layer + 1, heads=attn.shape[1])
    if view == "rollout":
        return attention_rollout(attn)[layer], t("attention.title_rollout", layer=layer + 1)
    return attn[layer, head], t("attention.title_head", layer=layer + 1, head=head + 1)


def npz_with_averages(result: AnalysisResult, index: int) -> bytes:
    """The input's numbers (``analysis_npz``) plus mean_over_heads (L, n, n) and rollout (L, n, n);
    made on click only."""
    attn = result.attention_for(index)
    return analysis_npz(result, index, mean_over_heads=attn.mean(axis=1), rollout=attention_rollout(attn))


def input_key(selection: Selection, text: str, part_name: str, mode: str = "off") -> str:
    """What the weights shown come from, as a short string (model, device, length limit, part, repeat, sentence)."""
    return "|".join((selection.model_key, selection.device, str(selection.max_len), part_name, mode, text))


GRID_LAYERS = 10  # a deep model's grid shows this many layers at a time (30 x 9 thumbnails would be ~25 px each)
WHOLE_GRID_LAYERS = 12  # up to this many layers the grid shows them all


def grid_window(n_layers: int, layer: int) -> tuple[int, int]:
    """(first, stop), 0-based: the layers the grid shows, those around ``layer`` (0-based): all of them
    up to WHOLE_GRID_LAYERS, else the GRID_LAYERS-layer block holding ``layer`` (30 layers: 0-10, 10-20, 20-30)."""
    if n_layers <= WHOLE_GRID_LAYERS:
        return 0, n_layers
    first = min(max(layer, 0), n_layers - 1) // GRID_LAYERS * GRID_LAYERS
    return first, min(first + GRID_LAYERS, n_layers)


def cached_grid(attn: np.ndarray, model: str, input_key: str, first: int = 0, stop: int | None = None):
    """The head grid of layers ``first`` .. ``stop`` of ``attn`` without an outline, built once per input,
    window, language and font scale: the thumbnails do not change when another head is chosen, only the
    outline moves.

    Kept per session by the cached service (``per_session``): the figure is changed in place
    (outline, presenter fonts). The key is a short string plus a fingerprint of the weights (each
    head's first query row), not a hash of the whole array."""
    lang = current_lang()
    shown = attn[first:stop]
    key = (input_key, lang, figure_font_scale(), attn.shape, first, hash(shown[:, :, :1].tobytes()))
    return compute(
        "head-grid",
        key,
        lambda: attention_figures.head_grid(
            np.where(np.isfinite(shown), shown, 0.0), lang=lang, first_layer=first
        ),  # edited later
        model=model,
        nbytes=attention_figures.payload_bytes,  # what is kept: the figure (~90 kB for 10 x 9 heads), not the weights
        slot_bytes=shown.nbytes,  # the scratch its thumbnails need, handed back after a large one
        per_session=True,
    )
