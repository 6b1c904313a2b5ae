"""What kind of model a loaded model is, and the pages it opens on, in the reader's language: the
Checkpoints page names them after an import (a GPT-2 opens on Generate, a BERT masked LM on Fill in
the blank; neither is a classifier)."""

from __future__ import annotations

from .i18n import t

# kind -> (catalogue key of its name, catalogue keys of the titles of the pages that run it, most useful first)
KINDS = {
    "language-model": ("checkpoints.kind_language_model",
                       ("generate.title", "common.page_attention", "atlas.title", "common.page_masks",
                        "common.page_playground")),
    "masked-lm": ("checkpoints.kind_masked_lm", ("fill_mask.title", "common.page_attention", "common.page_masks")),
    "classifier": ("checkpoints.kind_classifier",
                   ("common.page_playground", "common.page_classifier", "common.page_attention", "common.page_masks")),
    "encoder": ("checkpoints.kind_encoder", ("common.page_attention", "common.page_masks")),
    "encoder-decoder": ("checkpoints.kind_encoder_decoder", ("translate.title", "common.page_attention")),
    "vision": ("checkpoints.kind_vision", ("vision.page_title",)),
}  # fmt: skip


def model_kind(loaded) -> str:
    """One of ``KINDS``: read from the config's kind, an imported model's head, and whether it has a vocabulary."""
    cfg = loaded.config
    if getattr(loaded, "vocab", None) is None or cfg.kind.startswith("vision"):
        return "vision"
    if cfg.kind in ("encoder-decoder", "language-model"):
        return cfg.kind
    if getattr(loaded, "head", None) == "masked-lm":
        return "masked-lm"
    return "classifier" if cfg.has_head else "encoder"


def kind_name(loaded) -> str:
    """'language model (next token)', 'masked language model (fill in the blank)', 'classifier', …"""
    return t(KINDS[model_kind(loaded)][0])


def page_names(loaded) -> list[str]:
    """The titles of the pages that run ``loaded``, as the navigation shows them."""
    return [t(key) for key in KINDS[model_kind(loaded)][1]]


def pages_text(loaded) -> str:
    """'Generate, Attention, Head atlas, Masks and Playground' (Korean: commas only)."""
    names = page_names(loaded)
    if len(names) == 1:
        return names[0]
    return t("checkpoints.pages_comma").join(names[:-1]) + t("checkpoints.pages_and") + names[-1]
