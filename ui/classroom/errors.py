"""What the class store refuses, by name: the reason picks the message the user sees."""

from __future__ import annotations

REASONS = (
    "unknown_code",
    "expired",
    "closed",
    "not_teacher",
    "not_leading",
    "rate_limited",
    "too_many_joins",
    "too_many_answers",
    "class_full",
    "too_many_questions",
    "not_current",
    "revealed",
    "bad_choice",
    "no_question",
    "unknown_student",
    "store_unavailable",
    "store_read_only",
)


class ClassError(Exception):
    """A refusal the user is told about: ``reason`` (one of ``REASONS``) names the message."""

    def __init__(self, reason: str, detail: str = "") -> None:
        assert reason in REASONS, reason
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason, self.detail = reason, detail
