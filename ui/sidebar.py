"""The sidebar every page shares: language, device, and (on the pages that read them) model and maximum length."""

from __future__ import annotations

import streamlit as st

from transformer.core.decoder import KIND as LM_KIND
from transformer.core.devices import device_unavailable_reason, resolve_device

from . import session
from .checkpoint_text import problem_of, problem_text
from .decoder_attention import token_cap
from .i18n import DEFAULT_LANG, LANG_KEY, LANGUAGES, current_lang, set_lang, t
from .language_models import about_short, bundled_language_models
from .markdown import md_escape
from .models import Selection, bundled_models, default_model, get_model, uploaded_models
from .steps import bounded_slider
from .text import follow_default_text

DEVICES = {"Auto": "auto", "CPU": "cpu", "CUDA": "cuda"}
LANG_WIDGET = "lang_switch"
DEVICE_WIDGET = "device"
DEVICE_CHOICE = session.value("_device_choice")  # "auto" | "cpu" | "cuda", whatever the language


def _reason_text(reason: str) -> str:
    """``transformer.devices`` says why a device is missing in English; the known reasons are translated."""
    key = {
        "this PyTorch build has no CUDA support (a CPU-only wheel is installed)": "sidebar.reason_cpu_build",
        "no CUDA GPU is visible to PyTorch on this machine": "sidebar.reason_no_gpu",
    }.get(reason)
    return t(key) if key else reason


def _device_captions() -> list[str]:
    captions = []
    for name in DEVICES.values():
        if name == "auto":
            captions.append(t("sidebar.device_auto_caption", device=resolve_device("auto").type.upper()))
        else:
            reason = device_unavailable_reason(name)
            captions.append(
                t("sidebar.device_available")
                if reason is None
                else t("sidebar.device_missing", reason=_reason_text(reason))
            )
    return captions


def _device_labels() -> dict[str, str]:
    """{label shown: device name}, in this session's language."""
    return {(t("sidebar.device_auto") if name == "auto" else label): name for label, name in DEVICES.items()}


def _device_changed() -> None:
    DEVICE_CHOICE.set(_device_labels().get(session.value(DEVICE_WIDGET).get(), "auto"))


def device_radio(bar) -> str:
    """The device radio; its choice is kept as a device name, so it survives a change of language.

    The options are the shown labels themselves (no ``format_func``), as AppTest needs.
    Returns the chosen label (in this session's language).
    """
    labels = _device_labels()
    chosen = DEVICE_CHOICE.get("auto")
    session.value(DEVICE_WIDGET).set(next(label for label, name in labels.items() if name == chosen))
    return bar.radio(
        t("sidebar.device"),
        list(labels),
        key=DEVICE_WIDGET,
        captions=_device_captions(),
        on_change=_device_changed,
        horizontal=False,
    )


def _language_changed() -> None:
    names = {name: code for code, name in LANGUAGES.items()}
    old = current_lang()
    new = names.get(session.value(LANG_WIDGET).get(), DEFAULT_LANG)
    set_lang(new)
    if new != old:
        _follow_language(old, new)


def _follow_language(old: str, new: str) -> None:
    """A model and a text the user has not chosen follow the language: the English interface's default
    model and sentence become the Korean ones (and back); a model or text the user picked stays."""
    if session.chosen_model(default_model(old)) == default_model(old):
        session.select_model(default_model(new))
    follow_default_text(old, new)


def language_switch(container) -> str:
    """English / 한국어, kept in the session and in the address (``?lang=``); returns the language."""
    lang = current_lang()
    if st.query_params.get(LANG_KEY) != lang:
        st.query_params[LANG_KEY] = lang  # a page switch drops it; a link shared from any page keeps it
    session.value(LANG_WIDGET).set(LANGUAGES[lang])
    container.radio(
        t("sidebar.language"),
        list(LANGUAGES.values()),
        key=LANG_WIDGET,
        horizontal=True,
        on_change=_language_changed,
    )
    return lang


# Pages that do not read the sidebar's text model or its maximum length (they have their own model
# picker, or none): the sidebar leaves those two controls out there. "" is the Start page (the
# default page's address path is empty).
WITHOUT_TEXT_MODEL = frozenset(
    {"", "start", "translate", "generate", "fill_mask", "similarity", "head_atlas", "vision", "residual", "class"}
)


# Pages whose sidebar model list offers the language models too (bundled SmolLM2, review-lm, GGUF folders).
WITH_LANGUAGE_MODELS = frozenset({"attention"})


def offers_language_models(url_path: str) -> bool:
    """True when the page at ``url_path`` opens decoder-only language models from the sidebar."""
    return url_path in WITH_LANGUAGE_MODELS


def uses_text_model(url_path: str) -> bool:
    """True when the page at ``url_path`` ("attention" for pages/attention.py) reads the text model."""
    return url_path not in WITHOUT_TEXT_MODEL


def _device(bar) -> str:
    """The device radio; returns the device to use (the CPU, with a warning, when the chosen one is missing)."""
    device_label = device_radio(bar)
    device_name = _device_labels()[device_label]
    reason = device_unavailable_reason(device_name)
    if reason is not None:
        bar.warning(t("sidebar.device_fallback", device=device_label, reason=_reason_text(reason)))
        return "cpu"
    return resolve_device(device_name).type


def _default_len(config) -> int:
    """The length a model starts with: the one chosen on validation, else its longest input."""
    return min(config.default_max_tokens or config.max_len, _longest(config))


def _longest(config) -> int:
    """The longest input a page runs: the model's, or for a language model the Attention page's cap."""
    return token_cap(config) if config.kind == LM_KIND else config.max_len


def _max_len(bar, config) -> int:
    """The maximum-length slider, over 1 .. the model's longest input."""
    default_len, longest = _default_len(config), _longest(config)
    max_len_widget = session.value("max_len")
    if int(max_len_widget.get(default_len)) > longest:
        max_len_widget.set(longest)
    return bounded_slider(  # a model whose max_len is 1 has nothing to slide over
        bar,
        t("sidebar.max_len"),
        1,
        longest,
        default_len,
        key="max_len",
        bind="query-params",
        help=t("sidebar.max_len_help"),
    )


NAV_KEY = "app_nav"


def page_list(bar, pages) -> None:
    """The app's pages, as links at the top of the sidebar (the one on screen marked).

    The app draws them itself: Streamlit showed the ``pages/`` folder's own list (lower-case file names)
    on a fresh server's first visit until ``st.navigation`` had run, and the setting that turns that list
    off (``client.showSidebarNavigation``) turns off ``st.navigation``'s too."""
    with bar.container(key=NAV_KEY):
        for page in pages:
            st.page_link(page)
    bar.divider()


def sidebar(text_model: bool = True, language_models: bool = False) -> Selection | None:
    """Draw the shared sidebar; returns the selection, or None when no model can be used.

    ``text_model`` False (a page that does not read them): no model picker and no length slider; the
    selection then holds the model and length chosen before (the model's own length when none was),
    and the device. ``language_models``: the bundled language models are offered too (after the text
    models; the same list Generate and the head atlas use)."""
    bar = st.sidebar
    decoders = list(dict.fromkeys(bundled_language_models())) if language_models else []
    options = bundled_models() + decoders + list(uploaded_models())
    if not options:
        bar.error(t("sidebar.no_model"))
        return None
    if session.chosen_model() not in options:
        session.forget_model_choice()
    if text_model:
        model_key = bar.selectbox(
            t("sidebar.model"),
            options,
            key=session.MODEL_WIDGET,
            bind="query-params",
            help=t("sidebar.model_help"),
        )
    else:
        session.keep_unshown(session.MODEL_WIDGET, "max_len")
        model_key = session.chosen_model(options[0])
    device = _device(bar)
    if not text_model and session.value("max_len").is_set:
        return Selection(model_key, device, int(session.value("max_len").get()))
    try:
        loaded = get_model(Selection(model_key, device, 1))
        config = loaded.config
    except (OSError, ValueError, RuntimeError) as err:  # RuntimeError: e.g. out of GPU memory
        reason = problem_text(problem_of(err), current_lang())  # a GGUF file's refusal in the reader's language
        bar.error(t("sidebar.load_failed", model=md_escape(model_key), error=md_escape(reason)))
        return None
    if not text_model:
        return Selection(model_key, device, _default_len(config))
    is_lm = config.kind == LM_KIND
    # a language model said as Generate says it (SmolLM2: pretrained by others, 4-bit, English only)
    about = about_short(model_key, loaded, session.is_upload(model_key)) if is_lm else pretrained_note(loaded)
    if about:
        bar.caption(about)
    return Selection(model_key, device, int(_max_len(bar, config)))


def pretrained_note(loaded) -> str:
    """One line for a model trained by others and shipped as published (its metrics.json has an ``origin``):
    what it is, its size, who trained it on what, the languages it reads; empty for our own models."""
    metrics = getattr(loaded, "metrics", None) or {}
    origin = metrics.get("origin")
    if not isinstance(origin, dict) or not isinstance(origin.get("upstream"), str):
        return ""
    cfg = loaded.config
    return t("sidebar.pretrained_note", upstream=md_escape(origin["upstream"]), layers=cfg.num_layers,
             heads=cfg.num_heads, licence=md_escape(str(origin.get("licence", ""))))  # fmt: skip
