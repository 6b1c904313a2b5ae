"""How far a sentiment model's percentage can be trusted, from its metrics.json: where it was
measured, and how it does on short sentences with negation or contrast ("not bad at all"), the
first things a class types. A model trained on reviews can be 99 % sure and wrong on those.
"""

from __future__ import annotations

import streamlit as st

from .i18n import t
from .model_about import dataset_text

SHORT_BAR = 0.9  # share of the hand-written short sentences a model must get right for its number to go unflagged


def measured_line(metrics: dict | None) -> str | None:
    """'Measured on 25,000 test movie reviews (IMDB): 89.2% right.'; None when metrics.json does not say."""
    data = (metrics or {}).get("data") or {}
    accuracy = ((metrics or {}).get("metrics") or {}).get("test_accuracy")
    if not isinstance(data.get("dataset"), str) or not isinstance(data.get("test"), int) or accuracy is None:
        return None
    return t("classifier.trust_measured", test=f"{data['test']:,}", data=dataset_text(data["dataset"]),
             accuracy=f"{accuracy:.1%}")  # fmt: skip


def short_sentence_score(metrics: dict | None) -> tuple[int, int] | None:
    """(right, total) on the hand-written short negation/contrast sentences its metrics.json records
    (``outside_test_sets.probes``: ``right`` per group, ``answers`` per group {sentence: label given});
    None when not measured."""
    probes = ((metrics or {}).get("outside_test_sets") or {}).get("probes") or {}
    right, answers = probes.get("right") or {}, probes.get("answers") or {}
    total = sum(len(group) for group in answers.values())
    return (int(sum(right.values())), total) if right and total else None


def short_line(metrics: dict | None) -> str:
    """How it does on short sentences: the recorded score (flagged below ``SHORT_BAR``), or that it was not measured."""
    score = short_sentence_score(metrics)
    if score is None:
        return t("classifier.trust_short_unmeasured")
    right, total = score
    line = t("classifier.trust_short_probes", right=right, total=total, share=f"{right / total:.0%}")
    return line if right / total >= SHORT_BAR else line + " " + t("classifier.trust_short_weak")


def trust_note(metrics: dict | None) -> str | None:
    """One or two sentences for under a prediction; None for a model whose metrics.json records no test
    measurement (an imported or untrained model: nothing is known to report)."""
    measured = measured_line(metrics)
    return None if measured is None else f"{measured} {short_line(metrics)}"


def trust_caption(metrics: dict | None) -> None:
    """:func:`trust_note` as a caption under a prediction (nothing when there is no note)."""
    note = trust_note(metrics)
    if note is not None:
        st.caption(note)
