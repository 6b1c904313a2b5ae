"""An n-gram teacher for distillation (``python -m transformer.text.train --ngram-teacher W``).

TF-IDF word 1–2-grams + logistic regression — the bar the sentiment model is measured against — gives every
training text a probability, **out of fold**: the texts are cut into k folds and each fold is scored by a model
fitted on the other k − 1, so no text is scored by a model that saw it (a model scoring its own training texts
is nearly always sure and right, and would teach nothing beyond the label). The Transformer then learns from
the label and from these soft answers (knowledge distillation, Hinton et al. 2015): which reviews a bag of
word pairs finds easy, which it finds borderline.

A text that occurs more than once (SST-2's sentences repeated per epoch) is scored once, with all its copies
in one fold. Needs scikit-learn (in requirements.txt).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

FOLDS = 5
C = 4.0  # inverse regularisation strength of the logistic regression (as in bench/bench_sentiment_baseline.py)


def word_pairs_vectorizer():
    """The TF-IDF of word 1–2-grams every English bar here uses (the teacher, the baseline and ensemble benches)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True, max_features=400_000)


def _fold_of_each(unique_count: int, folds: int, seed: int) -> np.ndarray:
    """(U,) fold number in [0, folds) for each distinct text, about equal fold sizes, shuffled by ``seed``."""
    order = list(range(unique_count))
    random.Random(seed).shuffle(order)
    fold = np.empty(unique_count, dtype=np.int64)
    fold[order] = np.arange(unique_count) % folds
    return fold


def out_of_fold_probabilities(
    texts: Sequence[str], labels: Sequence[int], folds: int = FOLDS, seed: int = 0, c: float = C
) -> np.ndarray:
    """(N, K) class probabilities for each text from a TF-IDF + logistic-regression model that never saw it.

    K is the number of classes in ``labels`` (0 … K − 1, each present in every fold's training part).
    Copies of one text (lower-cased) share a fold and a probability; their label is the first copy's."""
    from sklearn.linear_model import LogisticRegression

    if folds < 2:
        raise ValueError(f"out-of-fold scoring needs at least 2 folds, not {folds}.")
    if len(texts) != len(labels):
        raise ValueError(f"{len(texts)} texts but {len(labels)} labels.")
    lowered = [t.lower() for t in texts]
    index_of: dict[str, int] = {}
    unique_texts, unique_labels = [], []
    for text, label in zip(lowered, labels):
        if text not in index_of:
            index_of[text] = len(unique_texts)
            unique_texts.append(text)
            unique_labels.append(int(label))
    y = np.asarray(unique_labels)
    classes = int(y.max()) + 1 if len(y) else 2
    fold = _fold_of_each(len(unique_texts), folds, seed)
    probabilities = np.zeros((len(unique_texts), classes), dtype=np.float32)
    for k in range(folds):
        held = np.flatnonzero(fold == k)
        fitted_on = np.flatnonzero(fold != k)
        vectorizer = word_pairs_vectorizer()
        x = vectorizer.fit_transform([unique_texts[i] for i in fitted_on])
        model = LogisticRegression(C=c, max_iter=2000).fit(x, y[fitted_on])
        scored = model.predict_proba(vectorizer.transform([unique_texts[i] for i in held]))
        probabilities[np.ix_(held, model.classes_)] = scored
    return probabilities[[index_of[t] for t in lowered]]
