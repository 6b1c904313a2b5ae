"""One generated sentence pair with its gold alignment."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pair:
    """source: the English tokens (exactly what ``basic_english`` makes of ``text``);
    target: the target tokens (words, or characters for dates); alignment[j]: the source
    position that target token j translates, or None (particles, separators); written: the text
    as a person writes it ("03.03.2021"), when that is not the tokens joined by spaces."""

    source: tuple[str, ...]
    target: tuple[str, ...]
    alignment: tuple[int | None, ...]
    written: str = ""

    def __post_init__(self) -> None:
        if len(self.alignment) != len(self.target):
            raise ValueError("alignment needs one entry per target token.")
        bad = [a for a in self.alignment if a is not None and not 0 <= a < len(self.source)]
        if bad:
            raise ValueError(f"alignment points outside the source: {bad}.")

    @property
    def text(self) -> str:
        return self.written or " ".join(self.source)

    @property
    def target_text(self) -> str:
        return " ".join(self.target)
