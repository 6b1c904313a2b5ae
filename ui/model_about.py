"""One line about the model a page runs: the data it was trained on (its metrics.json) and the
languages it reads (transformer.language_check), and where its temperature was fitted, in the
session's language."""

from __future__ import annotations

import re

from transformer.analysis.language_check import datasets

from .i18n import t
from .language import languages_of, languages_text
from .markdown import md_escape
from .models import Selection

# Datasets named in our metrics.json files, and their catalogue names (others are quoted as written).
DATASET_KEYS = (("IMDB", "start.data_imdb"), ("SST-2", "start.data_sst2"), ("NSMC", "start.data_nsmc"))


def dataset_text(dataset: str) -> str:
    key = next((key for name, key in DATASET_KEYS if name in dataset), None)
    return t(key) if key else md_escape(dataset)


def model_line(selection: Selection, loaded) -> str:
    """'The model now chosen, X, was trained on … and reads … only' (or what of it is known)."""
    name = md_escape(selection.model_key)
    languages = languages_of(selection, loaded)
    data = [dataset_text(d) for d in datasets(getattr(loaded, "metrics", None))]
    metrics = getattr(loaded, "metrics", None) or {}
    base = str(metrics.get("base_model", "")).split(" ")[0]  # "sentence-transformers/all-MiniLM-L6-v2 (…), …"
    if data and languages:
        joined, reads = t("start.data_joined").join(data), languages_text(languages)
        if base:  # a pretrained encoder trained by others, fine-tuned here
            return t("start.model_finetuned", name=name, base=md_escape(base), data=joined, languages=reads)
        return t("start.model_trained", name=name, data=joined, languages=reads)
    if languages:
        return t("start.model_reads", name=name, languages=languages_text(languages))
    return t("start.model_unknown", name=name)


def trained_on(metrics: dict | None) -> list[str]:
    """What a metrics.json says the model was trained on, in the reader's words: its data's ``dataset``
    strings, else the corpora its ``task`` names (IMDB, SST-2, NSMC); empty when it says neither."""
    found = datasets(metrics)
    if found:
        return [dataset_text(d) for d in found]
    task = str((metrics or {}).get("task", ""))
    return [t(key) for name, key in DATASET_KEYS if name in task]


def generator_line(name: str, loaded, imported: bool) -> str:
    """'Model: **X**, trained here on …' for a bundled language model; for an imported one its folder
    and family, and that its training data is not known here."""
    if imported:
        family = getattr(loaded, "family", "") or "Hugging Face"
        return t("generate.about_imported", name=md_escape(loaded.name or name), family=md_escape(family))
    data = trained_on(getattr(loaded, "metrics", None))
    if not data:
        return t("generate.about_unknown", name=md_escape(name))
    return t("generate.about_bundled", name=md_escape(name), data=t("start.data_joined").join(data))


# The two ways transformer.text.calibration writes where a temperature was fitted ("fitted_on").
FITTED_REVIEWS = re.compile(r"validation \(([\d,]+) reviews carved from train, seed (\d+)\)")
FITTED_MIX = re.compile(r"validation: ([\d,]+) IMDB reviews \+ ([\d,]+) SST-2 sentences carved from train, seed (\d+)")


def fitted_text(fitted_on: str) -> str:
    """Where a model's temperature was fitted, in the session's language (quoted as written when
    it is not one of the forms the calibration writes)."""
    if match := FITTED_REVIEWS.fullmatch(fitted_on):
        return t("classifier.fitted_reviews", count=match[1], seed=match[2])
    if match := FITTED_MIX.fullmatch(fitted_on):
        return t("classifier.fitted_mix", reviews=match[1], sentences=match[2], seed=match[3])
    return md_escape(fitted_on)
