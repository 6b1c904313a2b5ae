"""Which models the app can use and how they are loaded and run.

Bundled models are loaded once per (model, device) and shared by every browser session
(``st.cache_resource``): they are only read at inference. Uploaded models live in the
uploading session's ``st.session_state`` and are never shared.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from transformer import AnalysisResult, LoadedModel, analyze, load_bundle, resolve_device

from .navigation import ensure_shell

MODELS_DIR = Path(__file__).resolve().parent.parent / "assets" / "models"
DEFAULT_MODEL = "imdb-sentiment"
UPLOAD_PREFIX = "upload: "
UPLOADS_KEY = "uploaded_models"
MEMO_KEY = "upload_analysis_memo"


TEXT_KINDS = ("classifier", "encoder-decoder")


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
    return sorted(names, key=lambda n: n != DEFAULT_MODEL)


def uploaded_models() -> dict[str, LoadedModel]:
    """This session's uploads, by display name (``upload: <file>``)."""
    ensure_shell()
    return st.session_state.setdefault(UPLOADS_KEY, {})


@st.cache_resource(show_spinner="Loading the model…", max_entries=8)
def load_shared(name: str, device: str) -> LoadedModel:
    """A bundled model on ``device``, shared by all sessions (read-only at inference)."""
    return load_bundle(MODELS_DIR / name, resolve_device(device))


# Results of long inputs are large (attention and scores: 2 x B x L x H x T x T floats, 16 MB for
# one 512-token input here): keep few of them, and not forever, on a server a whole class shares.
@st.cache_data(show_spinner="Running the model…", max_entries=32, ttl=3600)
def analyze_shared(name: str, device: str, texts: tuple[str, ...], max_len: int) -> AnalysisResult:
    return analyze(load_shared(name, device), list(texts), max_len)


@dataclass(frozen=True)
class Selection:
    """What the sidebar chose: a model key, a resolved device name and a maximum length."""

    model_key: str
    device: str
    max_len: int

    @property
    def is_upload(self) -> bool:
        return self.model_key.startswith(UPLOAD_PREFIX)


def get_model(selection: Selection) -> LoadedModel:
    """The loaded model for ``selection`` (uploads come from this session only)."""
    if selection.is_upload:
        return _upload_on_device(selection)
    return load_shared(selection.model_key, selection.device)


def _upload_on_device(selection: Selection) -> LoadedModel:
    loaded = uploaded_models()[selection.model_key]
    if str(next(loaded.model.parameters()).device) != selection.device:
        loaded = _moved(loaded, selection.device)
        uploaded_models()[selection.model_key] = loaded
    return loaded


def _moved(loaded: LoadedModel, device: str) -> LoadedModel:
    from dataclasses import replace

    return replace(loaded, model=loaded.model.to(resolve_device(device)))


def run_analysis(selection: Selection, texts: list[str]) -> AnalysisResult:
    """Analyse ``texts`` with the selected model; raises ValueError with a message for the user."""
    texts = tuple(texts)
    if not selection.is_upload:
        return analyze_shared(selection.model_key, selection.device, texts, selection.max_len)
    memo = st.session_state.setdefault(MEMO_KEY, {})
    key = (selection.model_key, selection.device, texts, selection.max_len)
    if key not in memo:
        if len(memo) > 16:  # keep one session's memory bounded
            memo.clear()
        memo[key] = analyze(get_model(selection), list(texts), selection.max_len)
    return memo[key]


def current_selection() -> Selection:
    """The sidebar's selection for this run; stops the page with a message when there is none."""
    ensure_shell()
    selection = st.session_state.get("selection")
    if selection is None:
        st.info("Choose a model in the sidebar to begin.")
        st.stop()
    return selection
