"""An imported Hugging Face model as a :class:`~transformer.bundle.LoadedModel` every page can use:
the same fields, with its own text encoder (the reference tokenizer's ids) and what was read from where."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.loaded import LoadedModel
from .text import HFTextEncoder

FORMAT = "hugging-face"


@dataclass(frozen=True)
class ImportedModel(LoadedModel):
    """``encoder``: text -> tokens and ids as the reference tokenizer gives them; ``family``: the
    family table's row (e.g. "BERT"); ``head``: the mapped head ("sequence-classification",
    "masked-lm", "language-model" or "" for a bare encoder); ``sources``: what was read from which
    file ({"config": "config.json", "weights": "model.safetensors", "tokenizer": "tokenizer.json"})."""

    encoder: HFTextEncoder | None = None
    family: str = ""
    head: str = ""
    sources: dict[str, str] = field(default_factory=dict)

    def text_encoder(self):
        return self.encoder if self.encoder is not None else super().text_encoder()

    @property
    def is_masked_lm(self) -> bool:
        return self.head == "masked-lm"
