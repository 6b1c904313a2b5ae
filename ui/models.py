"""Which models the app can use and how they are loaded and run.

Bundled models are loaded once per (model, device) and shared by every browser session
(``st.cache_resource``): they are only read at inference. Uploaded models live in the
uploading session's registry (``ui.session``) and are never shared. Analyses and predictions go
through the cached service (``ui.compute``), inside the analysis slots.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import partial
from pathlib import Path

import numpy as np
import streamlit as st

from transformer import AnalysisResult, LoadedModel, load_bundle, resolve_device
from transformer.analysis.analyze import analyze_encoded, encode_for
from transformer.core.inputs import EncodedInputs, encode_inputs, weights_nbytes
from transformer.hf.gguf_import import gguf_in_folder, load_gguf_folder
from transformer.text.predict import BatchPrediction, predict_encoded

from . import compute, session
from .compute import CACHE_BYTES, MB, ByteBudgetCache  # noqa: F401 - the cache's size and type, named here for tests
from .i18n import current_lang, t
from .navigation import ensure_shell
from .session import MEMO_KEY, UPLOAD_PREFIX, UPLOADS_KEY  # noqa: F401 - the session's keys, named here for tests
from .work_slots import TRIM_AFTER_BYTES

MODELS_DIR = Path(__file__).resolve().parent.parent / "assets" / "models"
DEFAULT_MODEL = "imdb-sentiment"
DEFAULT_MODELS = {"en": "minilm-sentiment", "ko": "nsmc-sentiment"}  # the text model each interface language starts on
REQUEST_BYTES = 200 * MB  # one analysis request at most: five 1,024-token reviews (173 MB) fit, six do not; one
# 512-token input of a bert-base-sized model (12 layers × 12 heads: 189 MB) fits
REQUEST_TOKENS = 32_768  # tokens one Playground request runs at most (32 reviews of 1,024 tokens)
LONG_REQUEST_CHARS = 20_000  # a Playground request this long hands its scratch memory back afterwards


TEXT_KINDS = ("classifier", "encoder-decoder")


def result_nbytes(result: AnalysisResult) -> int:
    """Bytes of an analysis result's arrays (attention and scores dominate), plus its token lists."""
    arrays = sum(v.nbytes for f in fields(result) if isinstance(v := getattr(result, f.name), np.ndarray))
    return arrays + sum(64 * len(tokens) for tokens in result.tokens) + sum(len(t) for t in result.texts)


@functools.cache  # the sidebar asks on every run; a bundled folder's kind does not change while the app runs
def bundle_kind(folder: Path) -> str | None:
    """The ``kind`` in a bundled model's ``config.json`` (None when unreadable); a folder holding one GGUF
    file and no config.json (SmolLM2) is a language model: its config is in the file."""
    if gguf_in_folder(folder) is not None:
        return "language-model"
    try:
        data = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    if "kind" not in data and isinstance(data.get("model_type"), str):  # a Hugging Face model folder
        return HF_KINDS.get(data["model_type"], "classifier")
    return data.get("kind", "classifier")


def bundled_models(kinds: tuple[str, ...] = TEXT_KINDS) -> list[str]:
    """Names of the bundled-model folders whose config ``kind`` is in ``kinds``, the default first,
    then the server's own model folders of those kinds (:func:`server_models`)."""
    folders = sorted(MODELS_DIR.iterdir()) if MODELS_DIR.is_dir() else []
    names = [p.name for p in folders if p.is_dir() and bundle_kind(p) in kinds]
    first = default_model(current_lang())
    served = [name for name, folder in server_models().items() if bundle_kind(folder) in kinds]
    return sorted(names, key=lambda n: n != first) + served


SERVER_MODELS_ENV = "ATTENTION_LAB_MODELS"
SERVER_PREFIX = "server: "
SERVER_KINDS = ("classifier", "language-model")  # kinds the text pages and Generate open from a server folder
HF_KINDS = {"gpt2": "language-model", "marian": "encoder-decoder", "vit": "vision-classifier"}


def server_models() -> dict[str, Path]:
    """Model folders named by whoever runs the server in ``$ATTENTION_LAB_MODELS`` (paths separated by
    ``os.pathsep``): bundled-model folders, Hugging Face model folders (say, a downloaded
    ``klue/bert-base``) or folders holding one GGUF file (a model of llama.cpp, Ollama, LM Studio),
    offered to every session as ``server: <folder name>`` and loaded once for all, unlike an upload.
    Folders without a readable config.json or GGUF file, or of a kind the text pages do not open,
    are left out."""
    return _server_models(os.environ.get(SERVER_MODELS_ENV, ""))


@functools.lru_cache(maxsize=4)
def _server_models(setting: str) -> dict[str, Path]:
    folders = [Path(part).expanduser() for part in setting.split(os.pathsep) if part.strip()]
    # a model folder (config.json), or a folder holding one .gguf file (a llama.cpp / Ollama / LM Studio model)
    usable = [f for f in folders if (f / "config.json").is_file() or gguf_in_folder(f) is not None]
    found = {f"{SERVER_PREFIX}{folder.name}": folder for folder in usable}
    return {name: folder for name, folder in found.items() if bundle_kind(folder) in SERVER_KINDS}


def model_folder(name: str) -> Path:
    """The folder of a bundled model or of a server model named ``name``."""
    return server_models().get(name) or MODELS_DIR / name


DEFAULT_ENGLISH_ENV = "ATTENTION_LAB_ENGLISH_MODEL"  # a server may start English sessions on another bundled model


def default_model(lang: str) -> str:
    """The bundled text model the pages start on in ``lang`` (the English one when that is missing). English
    starts on the sentiment model fine-tuned on the real encoder; ``$ATTENTION_LAB_ENGLISH_MODEL`` (e.g.
    ``imdb-sentiment``, the model the course notebooks build) makes a server start English sessions on another."""
    name = DEFAULT_MODELS.get(lang, DEFAULT_MODEL)
    if lang != "ko" and os.environ.get(DEFAULT_ENGLISH_ENV, "").strip():
        name = os.environ[DEFAULT_ENGLISH_ENV].strip()
    return name if (MODELS_DIR / name / "config.json").is_file() else DEFAULT_MODEL


def uploaded_models() -> dict[str, LoadedModel]:
    """This session's uploaded text models, by display name (``upload: <file>``)."""
    ensure_shell()
    return session.uploads_of(LoadedModel)


@st.cache_resource(show_spinner="Loading the model…", max_entries=8)
def load_shared(name: str, device: str) -> LoadedModel:
    """A bundled or server model on ``device``, shared by all sessions (read-only at inference)."""
    folder = model_folder(name)
    if gguf_in_folder(folder) is not None:  # a GGUF file: dequantised once here, kept for every session
        return load_gguf_folder(folder, resolve_device(device))
    if (folder / "config.json").is_file() and "kind" not in json.loads((folder / "config.json").read_text("utf-8")):
        from transformer.hf.importer import load_hf_folder  # Hugging Face folders named by the server

        return load_hf_folder(folder, resolve_device(device))
    return load_bundle(folder, resolve_device(device))


def _analysed(loaded: LoadedModel, texts: list[str], max_len: int) -> AnalysisResult:
    """``texts`` tokenised once (a language model's prompts as ``inspect`` reads them), sized (within the
    request budget) and analysed."""
    inputs = encode_for(loaded, texts, max_len)
    checked_size(loaded, inputs)
    return analyze_encoded(loaded, inputs)


def analysis_nbytes(loaded: LoadedModel, texts: list[str], max_len: int) -> int:
    """Bytes the arrays of ``analyze(loaded, texts, max_len)`` would take (``weights_nbytes``: the
    weights, and the queries and keys the pre-mask scores are computed from when read)."""
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


def analysis_later(selection: Selection, texts: list[str], slot_bytes: int = 0) -> Callable[[], AnalysisResult]:
    """A function giving the analysis of ``texts`` when called, from any thread (a download made on
    click runs outside the script): from the cached service (``ui.compute``: shared by all sessions
    for bundled models, this session's own for uploads), else analysed again in an analysis slot.
    It holds the model and the texts (which the app holds anyway), never the result. ``slot_bytes``: the
    memory the analysis is expected to need (the server's budget for heavy requests, ``ui.work_slots``)."""
    key = (selection.device, tuple(texts), selection.max_len)
    analyse = partial(_analysed, get_model(selection), list(texts), selection.max_len)
    return compute.later(
        "analysis", key, analyse, model=selection.model_key, nbytes=result_nbytes, slot_bytes=slot_bytes
    )


def session_memo() -> ByteBudgetCache:
    """This session's store of the cached service (``ui.compute.session_store``)."""
    return compute.session_store()


def run_predictions(selection: Selection, inputs: EncodedInputs) -> tuple[BatchPrediction, float]:
    """Predictions, tokens and unknown flags for ``inputs`` (as :func:`within_token_budget` tokenised
    them) without attention weights, and the milliseconds they took when first run, tokenising
    included. Run in length-sorted batches of bounded size (``transformer.text.predict``): many
    long lines never make one giant padded batch."""
    texts = inputs.texts
    long_request = sum(map(len, texts)) > LONG_REQUEST_CHARS  # memory worth handing back afterwards

    def predicted() -> tuple[BatchPrediction, float]:
        start = time.perf_counter()
        batch = predict_encoded(get_model(selection), inputs, batch_size=16)
        return batch, inputs.tokenize_ms + (time.perf_counter() - start) * 1000

    return compute.compute(
        "predict",
        (selection.device, tuple(texts), selection.max_len),
        predicted,
        model=selection.model_key,
        nbytes=lambda found: prediction_nbytes(found[0]),
        slot_bytes=TRIM_AFTER_BYTES if long_request else 0,
    )


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
