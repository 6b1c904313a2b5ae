"""One line about the model a page runs: the data it was trained on (its metrics.json) and the
languages it reads (transformer.language_check), in the session's language."""

from __future__ import annotations

from transformer.language_check import datasets

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
    if data and languages:
        joined = t("start.data_joined").join(data)
        return t("start.model_trained", name=name, data=joined, languages=languages_text(languages))
    if languages:
        return t("start.model_reads", name=name, languages=languages_text(languages))
    return t("start.model_unknown", name=name)
