"""A model ready for inference, with what is needed to feed it text (every way in yields one)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tokenizers import Tokenizer
from torch import nn

from .config import ModelConfig
from .masked_lm import KIND as MASKED_LM
from .masked_lm import BlankTextEncoder
from .pieces import PieceSplitter
from .tokenizer import TextEncoder, Vocab, basic_english_digits


@dataclass(frozen=True)
class LoadedModel:
    """A model ready for inference with what is needed to feed it text."""

    model: nn.Module
    config: ModelConfig
    vocab: Vocab
    target_vocab: Vocab | None = None
    name: str = ""
    format: str = "attention-lab"
    metrics: dict | None = None
    notes: tuple[str, ...] = ()
    # every value assumed rather than read: name -> {"value": ..., "source": "user" | "checkpoint" |
    # "family default" | "vocabulary"} (empty for our own bundles: their config says everything)
    assumptions: dict[str, dict] = field(default_factory=dict)
    nonfinite_weights: tuple[str, ...] = ()  # names of weight tensors holding NaN or ±inf
    splitter: PieceSplitter | None = None  # the subword pieces of tokenizer.json (config.tokenizer "wordpiece")
    lm_tokenizer: Tokenizer | None = None  # a language model's byte-level BPE (tokenizer.json, kind "language-model")

    def text_encoder(self) -> TextEncoder:
        """What turns text into this model's tokens and ids: its subword pieces, ``basic_english`` words,
        or (config.tokenizer "digits") those words cut into digits and symbols."""
        if self.config.tokenizer == "digits":
            return TextEncoder(self.vocab, split=basic_english_digits)
        words = TextEncoder(self.vocab, split=self.splitter.split if self.splitter is not None else None)
        return BlankTextEncoder(words) if self.config.kind == MASKED_LM else words

    @property
    def is_masked_lm(self) -> bool:
        """Whether this model fills in blanks (a masked language model)."""
        return self.config.kind == MASKED_LM
