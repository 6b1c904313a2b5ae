"""What a foreign checkpoint cannot say about itself: the user's answers (None: not given)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ImportOptions:
    """Answers given by the user (the CLI's flags, the Checkpoints page's widgets).

    None means "not given": the value saved in the checkpoint is used, else the family's
    default; either way the value used and where it came from end up in
    ``LoadedModel.assumptions``. ``positional``: 'none' or 'sinusoidal' (with ``pe_base``);
    ``bos``/``eos``: start and end tokens of the target side, when its vocabulary has none.
    """

    vocab_path: str | None = None
    num_heads: int | None = None
    pooling: str | None = None
    target_vocab_path: str | None = None
    label_names: tuple[str, ...] | None = None
    scale_embedding: bool | None = None
    pad_id: int | None = None
    mask_fill: float | None = None
    norm_first: bool | None = None
    activation: str | None = None
    max_len: int | None = None
    positional: str | None = None
    pe_base: float | None = None
    bos: str | None = None
    eos: str | None = None
