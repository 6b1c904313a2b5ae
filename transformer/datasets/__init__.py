"""Corpora shared by several tasks (IMDB reviews: the classifier and the language model read them)."""
