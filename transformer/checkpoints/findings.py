"""What was recognised in a checkpoint, as codes and values, never as prose.

A :class:`Finding` is a ``code`` and the ``values`` its sentence takes. The app reads the code
through its catalogue (English or Korean, ``ui/checkpoint_text.py``); the command line and the
notes kept on a loaded model read it through :data:`ENGLISH` (:meth:`Finding.english`). A value
may itself be a Finding (a head that could not be mapped says why).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# the rows of what was inferred from the shapes, in the order they are shown
ROW_ENGLISH = {
    "architecture": "Architecture",
    "kind": "Kind",
    "vocab": "Vocabulary size",
    "target_vocab": "Target vocabulary size",
    "d_model": "d_model",
    "encoder_layers": "Encoder layers",
    "decoder_layers": "Decoder layers",
    "d_ff": "Feed-forward size",
    "max_len": "Maximum length",
    "positional": "Positional encoding",
    "norm": "LayerNorm",
    "head": "Head",
    "parameters": "Parameters",
}

# every finding's English sentence (str.format fields are the finding's values)
ENGLISH = {
    "count": "{n:,}",
    "number": "{n}",
    "family": "{title}",
    "kind_encoder_decoder": "encoder-decoder",
    "kind_classifier": "encoder + classifier head",
    "kind_encoder_only": "encoder only (no usable head)",
    "max_len_not_stored": "not stored (asked below)",
    "positional_formula": "sinusoid formula",
    "positional_table": "table from the file",
    "norm_layer_norm": "nn.LayerNorm, eps {eps:g}",
    "norm_layer_norm_final": "nn.LayerNorm, eps {eps:g}, plus a final LayerNorm",
    "norm_std_eps": "divides by (std + eps), unbiased std, eps {eps:g}",
    "norm_std_eps_final": "divides by (std + eps), unbiased std, eps {eps:g}, plus a final LayerNorm",
    "head_linear_sigmoid": "Linear {sizes} (one logit → sigmoid)",
    "head_linear_softmax": "Linear {sizes} ({outputs} logits → softmax)",
    "head_mlp_sigmoid": "MLP with ReLU ({layers} Linear layers) {sizes} (one logit → sigmoid)",
    "head_mlp_softmax": "MLP with ReLU ({layers} Linear layers) {sizes} ({outputs} logits → softmax)",
    "head_none": "none — {problem}",
    "head_output_layer": "output layer d_model → {n:,}",
    # why a classifier head could not be mapped
    "head_missing": "no classifier head was found (only the encoder was saved)",
    "head_first_width": "its first layer {layer} does not take d_model = {d_model} inputs",
    "head_chain": "{layer} does not take the {width} outputs of the layer before it",
    "head_not_linear": "it has layers other than Linear: {layers}",
    # notes shown under the table
    "note_head_unmapped": (
        "The classifier head could not be mapped: {problem}. The encoder's attention is shown; there are no "
        "predictions."
    ),
    "note_positional_assumed": "No positional table is saved: the sinusoid of the paper (base 10000) is assumed.",
    "note_positional_formula": "The saved positional table ({max_len} positions) is the sinusoid formula.",
    "note_positional_rounding": (
        "The saved positional table ({max_len} positions) is the sinusoid formula up to float32 rounding (largest "
        "difference {gap:.1e}); it is loaded as saved so the attention matches your code exactly."
    ),
    "note_positional_table": (
        "The saved positional table ({max_len} positions) is a trained or custom table; it is loaded as saved."
    ),
}


@dataclass(frozen=True)
class Finding:
    """One recognised fact: ``code`` (a key of :data:`ENGLISH` and of the app's catalogue) and the
    numbers, names and nested findings its sentence takes."""

    code: str
    values: Mapping[str, object] = field(default_factory=dict)

    def english(self) -> str:
        """The finding in English (nested findings in English too)."""
        return render(self, lambda code, fields: ENGLISH[code].format(**fields))


def render(finding: Finding, text) -> str:
    """``text(code, fields)`` of ``finding``, every nested Finding among its values rendered first."""
    fields = {k: render(v, text) if isinstance(v, Finding) else v for k, v in finding.values.items()}
    return text(finding.code, fields)


def english_rows(rows: list[tuple[str, Finding]]) -> list[tuple[str, str]]:
    """(what, value) rows in English, for the command line and messages."""
    return [(ROW_ENGLISH[row], value.english()) for row, value in rows]
