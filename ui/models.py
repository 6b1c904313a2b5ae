"""Which models the app can use and how they are loaded and run.

Bundled models are loaded once per (model, device) and shared by every browser session
(``st.cache_resource``): they are only read at inference. Uploaded models live in the
uploading session's registry (``ui.session``) and are never shared.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, fields
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st

from transformer import AnalysisResult, LoadedModel, load_bundle, resolve_device
from transformer.analysis import analyze_encoded
from transformer.inputs import EncodedInputs, encode_inputs, weights_nbytes
from transformer.text.predict import BatchPrediction, predict_encoded

from . import session
from .i18n import current_lang, t
from .navigation import ensure_shell
from .session import MEMO_KEY, UPLOAD_PREFIX, UPLOADS_KEY  # noqa: F401 - the session's keys, named here for tests
from .work_slots import TRIM_AFTER_BYTES, analysis_slot

MODELS_DIR = Path(__file__).resolve().parent.parent / "assets" / "models"
DEFAULT_MODEL = "imdb-sentiment"
DEFAULT_MODELS = {"en": DEFAULT_MODEL, "ko": "nsmc-sentiment"}  # the text model each interface language starts on
MB = 1_000_000
# Analyses shared by every session hold at most this many bytes in all (least recently used dropped
# first); set ATTENTION_LAB_CACHE_MB to change it. One 1,024-token input's analysis is ~67 MB.
CACHE_BYTES = int(float(os.environ.get("ATTENTION_LAB_CACHE_MB", 256)) * MB)
SESSION_MEMO_BYTES = 64 * MB  # one session's analyses with its uploaded models
REQUEST_BYTES = 200 * MB  # one analysis request at most: two 1,024-token reviews (134 MB) fit, three do not
REQUEST_TOKENS = 32_768  # tokens one Playground request runs at most (32 reviews of 1,024 tokens)
LONG_REQUEST_CHARS = 20_000  # a Playground request this long hands its scratch memory back afterwards


TEXT_KINDS = ("classifier", "encoder-decoder")


class ByteBudgetCache:
    """A thread-safe least-recently-used store bounded by the bytes of what it holds.

    ``put`` drops the least recently used entries until the new one fits; an entry larger than
    the whole budget is not stored (the caller still has it). Iterating gives the keys; ``del``
    removes one."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        return self._bytes

    def get(self, key: Hashable) -> Any:
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key][0]

    def put(self, key: Hashable, value: Any, nbytes: int) -> None:
        with self._lock:
            if key in self._items:
                self._bytes -= self._items.pop(key)[1]
            if nbytes > self.max_bytes:
                return
            while self._items and self._bytes + nbytes > self.max_bytes:
                self._bytes -= self._items.popitem(last=False)[1][1]
            self._items[key] = (value, nbytes)
            self._bytes += nbytes

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[Hashable]:
        with self._lock:
            return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def __delitem__(self, key: Hashable) -> None:
        with self._lock:
            self._bytes -= self._items.pop(key)[1]


def result_nbytes(result: AnalysisResult) -> int:
    """Bytes of an analysis result's arrays (attention and scores dominate), plus its token lists."""
    arrays = sum(v.nbytes for f in fields(result) if isinstance(v := getattr(result, f.name), np.ndarray))
    return arrays + sum(64 * len(tokens) for tokens in result.tokens) + sum(len(t) for t in result.texts)


@functools.cache  # the sidebar asks on every run; a bundled folder's kind does not change while the app runs
def bundle_kind(folder: Path) -> str | None:
    """The ``kind`` in a bundled model's ``config.json`` (None when unreadable)."""
    try:
        data = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data.get("kind", "classifier") if isinstance(data, dict) else None


def bundled_models(kinds: tuple[str, ...] = TEXT_KINDS) -> list[str]:
    """Names of the bundled-model folders whose config ``kind`` is in ``kinds``, the default first."""
    folders = sorted(MODELS_DIR.iterdir()) if MODELS_DIR.is_dir() else []
    names = [p.name for p in folders if (p / "config.json").is_file() and bundle_kind(p) in kinds]
    first = default_model(current_lang())
    return sorted(names, key=lambda n: n != first)


def default_model(lang: str) -> str:
    """The bundled text model the pages start on in ``lang`` (the English one when that is missing)."""
    name = DEFAULT_MODELS.get(lang, DEFAULT_MODEL)
    return name if (MODELS_DIR / name / "config.json").is_file() else DEFAULT_MODEL


def uploaded_models() -> dict[str, LoadedModel]:
    """This session's uploaded text models, by display name (``upload: <file>``)."""
    ensure_shell()
    return session.uploads_of(LoadedModel)


@st.cache_resource(show_spinner="Loading the model…", max_entries=8)
def load_shared(name: str, device: str) -> LoadedModel:
    """A bundled model on ``device``, shared by all sessions (read-only at inference)."""
    return load_bundle(MODELS_DIR / name, resolve_device(device))


@st.cache_resource
def shared_results() -> ByteBudgetCache:
    """Analyses of bundled models, shared by all sessions, at most CACHE_BYTES in all."""
    return ByteBudgetCache(CACHE_BYTES)


def cached_analysis(
    cache: ByteBudgetCache, key: Hashable, loaded: LoadedModel, texts: list[str], max_len: int
) -> AnalysisResult:
    """The analysis under ``key`` in ``cache``; on a miss, ``texts`` are tokenised once, sized, and
    analysed in one of the process's analysis slots (within the request budget), and the result is stored."""
    result = cache.get(key)
    if result is None:
        inputs = encode_inputs(loaded, texts, max_len)
        need = checked_size(loaded, inputs)
        with analysis_slot(need):
            result = analyze_encoded(loaded, inputs)
        cache.put(key, result, result_nbytes(result))
    return result


def analysis_nbytes(loaded: LoadedModel, texts: list[str], max_len: int) -> int:
    """Bytes the attention weights and scores of ``analyze(loaded, texts, max_len)`` would take:
    2 arrays × B × layers × heads × T² float32, T the longest input after truncation."""
    return weights_nbytes(loaded.config, encode_inputs(loaded, texts, max_len))


def check_request_size(loaded: LoadedModel, texts: list[str], max_len: int) -> int:
    """:func:`checked_size` of ``texts`` tokenised for ``loaded``."""
    return checked_size(loaded, encode_inputs(loaded, texts, max_len))


def checked_size(loaded: LoadedModel, inputs: EncodedInputs) -> int:
    """The bytes the analysis of ``inputs`` will take (``weights_nbytes``); raises ValueError (a
    message for the user) when that exceeds REQUEST_BYTES."""
    need = weights_nbytes(loaded.config, inputs)
    if need > REQUEST_BYTES:
        lines = len(inputs.texts)
        raise ValueError(
            t("text.request_too_large", lines=lines, need=f"{need / MB:,.0f}", limit=f"{REQUEST_BYTES / MB:,.0f}")
        )
    return need


@dataclass(frozen=True)
class Selection:
    """What the sidebar chose: a model key, a resolved device name and a maximum length."""

    model_key: str
    device: str
    max_len: int

    @property
    def is_upload(self) -> bool:
        return session.is_upload(self.model_key)


def get_model(selection: Selection) -> LoadedModel:
    """The loaded model for ``selection`` (uploads come from this session only)."""
    if selection.is_upload:
        return _upload_on_device(selection)
    return load_shared(selection.model_key, selection.device)


def _upload_on_device(selection: Selection) -> LoadedModel:
    loaded = uploaded_models()[selection.model_key]
    if str(next(loaded.model.parameters()).device) != selection.device:
        loaded = _moved(loaded, selection.device)
        session.store_upload(selection.model_key, loaded)
    return loaded


def _moved(loaded: LoadedModel, device: str) -> LoadedModel:
    from dataclasses import replace

    return replace(loaded, model=loaded.model.to(resolve_device(device)))


def run_analysis(selection: Selection, texts: list[str]) -> AnalysisResult:
    """Analyse ``texts`` with the selected model; raises ValueError with a message for the user."""
    return analysis_later(selection, texts)()


def analysis_later(selection: Selection, texts: list[str]) -> Callable[[], AnalysisResult]:
    """A function giving the analysis of ``texts`` when called, from any thread (a download made on
    click runs outside the script): from the cache that holds it (shared by all sessions for bundled
    models, this session's memo for uploads), else analysed again. It holds the model, the cache and
    the texts (which the app holds anyway), never the result."""
    key = (selection.model_key, selection.device, tuple(texts), selection.max_len)
    cache = session_memo() if selection.is_upload else shared_results()
    return partial(cached_analysis, cache, key, get_model(selection), list(texts), selection.max_len)


def session_memo() -> ByteBudgetCache:
    """This session's analyses with its uploaded models (at most SESSION_MEMO_BYTES)."""
    return session.upload_memo(lambda: ByteBudgetCache(SESSION_MEMO_BYTES), lambda m: isinstance(m, ByteBudgetCache))


@st.cache_resource
def shared_predictions() -> ByteBudgetCache:
    """Playground predictions of bundled models (no attention kept: small), shared by all sessions."""
    return ByteBudgetCache(CACHE_BYTES // 8)


def run_predictions(selection: Selection, inputs: EncodedInputs) -> tuple[BatchPrediction, float]:
    """Predictions, tokens and unknown flags for ``inputs`` (as :func:`within_token_budget` tokenised
    them) without attention weights, and the milliseconds they took when first run, tokenising
    included. Run in length-sorted batches of bounded size (``transformer.text.predict``): many
    long lines never make one giant padded batch."""
    texts = inputs.texts
    key = (selection.model_key, "predict", selection.device, tuple(texts), selection.max_len)
    cache = session_memo() if selection.is_upload else shared_predictions()
    found = cache.get(key)
    if found is None:
        start = time.perf_counter()
        long_request = sum(map(len, texts)) > LONG_REQUEST_CHARS  # memory worth handing back afterwards
        with analysis_slot(TRIM_AFTER_BYTES if long_request else 0):
            batch = predict_encoded(get_model(selection), inputs, batch_size=16)
        found = (batch, inputs.tokenize_ms + (time.perf_counter() - start) * 1000)
        cache.put(key, found, prediction_nbytes(batch))
    return found


def within_token_budget(
    selection: Selection, lines: list[str], budget: int = REQUEST_TOKENS
) -> tuple[EncodedInputs, int]:
    """The first lines whose tokens (after truncation at the selected maximum length) fit in
    ``budget`` (always at least one line), tokenised (:func:`run_predictions` runs these ids), and
    the number of tokens of all the lines."""
    loaded = get_model(selection)
    limit = min(selection.max_len, loaded.config.max_len)
    start = time.perf_counter()
    encoded = loaded.text_encoder().encode_batch(lines, limit, loaded.config.add_cls_token)
    kept, used = 0, 0
    for e in encoded:
        if kept and used + len(e.ids) > budget:
            break
        kept, used = kept + 1, used + len(e.ids)
    inputs = EncodedInputs(lines[:kept], encoded[:kept], limit, 1000 * (time.perf_counter() - start))
    return inputs, sum(len(e.ids) for e in encoded)


def prediction_nbytes(batch: BatchPrediction) -> int:
    """Approximate bytes of a batch prediction (its texts and tokens dominate)."""
    return sum(len(p.text) + 16 * len(p.tokens) + 256 for p in batch.predictions) + 1024


def current_selection() -> Selection:
    """The sidebar's selection for this run; stops the page with a message when there is none."""
    ensure_shell()
    selection = session.selection()
    if selection is None:
        st.info(t("text.choose_model"))
        st.stop()
    return selection
