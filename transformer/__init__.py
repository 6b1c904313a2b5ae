"""Attention Lab's from-scratch Transformer: every intermediate the app shows, no Streamlit.

Quick start (in a notebook)::

    from transformer import load_model, analyze
    loaded = load_model("assets/models/imdb-sentiment")
    result = analyze(loaded, ["the movie was great"])
    result.attention_for(0).shape   # (layers, heads, tokens, tokens)

Sentence similarity with the bundled real encoder (its folder's pooling recipe)::

    from transformer import read_recipe, sentence_similarity
    folder = "assets/models/all-minilm-l6-v2"
    sims = sentence_similarity(load_model(folder), ["a cat sleeps", "a kitten naps"], read_recipe(folder))
    sims.similarity                 # (sentences, sentences) cosine
"""

from .analysis.analyze import AnalysisResult, analyze
from .analysis.similarity import SentenceRecipe, SimilarityResult, read_recipe, sentence_similarity
from .bundle import load_bundle, save_bundle
from .core.attention import attention_steps, scaled_dot_product_attention
from .core.config import ModelConfig
from .core.devices import available_devices, resolve_device
from .core.loaded import LoadedModel
from .core.masks import combine, decoder_self_mask, look_ahead_mask, padding_mask
from .core.model import EncoderDecoder, SequenceClassifier, build_model
from .core.multihead import MultiHeadAttention
from .core.positional import sinusoidal_encoding
from .loader import ImportOptions, load_model

__all__ = [
    "AnalysisResult",
    "EncoderDecoder",
    "ImportOptions",
    "LoadedModel",
    "ModelConfig",
    "MultiHeadAttention",
    "SentenceRecipe",
    "SequenceClassifier",
    "SimilarityResult",
    "analyze",
    "attention_steps",
    "available_devices",
    "build_model",
    "combine",
    "decoder_self_mask",
    "load_bundle",
    "load_model",
    "look_ahead_mask",
    "padding_mask",
    "read_recipe",
    "resolve_device",
    "save_bundle",
    "scaled_dot_product_attention",
    "sentence_similarity",
    "sinusoidal_encoding",
]
