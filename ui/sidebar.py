"""The sidebar every page shares: model, device and maximum length."""

from __future__ import annotations

import streamlit as st

from transformer.devices import device_unavailable_reason, resolve_device

from .markdown import md_escape
from .models import Selection, bundled_models, get_model, uploaded_models

DEVICES = {"Auto": "auto", "CPU": "cpu", "CUDA": "cuda"}


def _device_captions() -> list[str]:
    captions = []
    for name in DEVICES.values():
        if name == "auto":
            captions.append(f"uses {resolve_device('auto').type.upper()} here")
        else:
            reason = device_unavailable_reason(name)
            captions.append("available" if reason is None else f"not available: {reason}")
    return captions


def sidebar() -> Selection | None:
    """Draw the shared sidebar; returns the selection, or None when no model can be used."""
    bar = st.sidebar
    options = bundled_models() + list(uploaded_models())
    if not options:
        bar.error("No model found: assets/models/ is empty and nothing was uploaded.")
        return None
    if st.session_state.get("model") not in options:
        st.session_state.pop("model", None)
    model_key = bar.selectbox(
        "Model",
        options,
        key="model",
        bind="query-params",
        help="Bundled models, and checkpoints you uploaded on the Checkpoints page (visible to you only).",
    )
    device_label = bar.radio("Device", list(DEVICES), key="device", captions=_device_captions(), horizontal=False)
    reason = device_unavailable_reason(DEVICES[device_label])
    if reason is not None:
        bar.warning(f"{device_label} is not available ({reason}); using the CPU instead.")
        device = "cpu"
    else:
        device = resolve_device(DEVICES[device_label]).type
    base = Selection(model_key, device, 1)
    try:
        config = get_model(base).config
    except (OSError, ValueError, RuntimeError) as err:  # RuntimeError: e.g. out of GPU memory
        bar.error(f"Could not load {md_escape(model_key)}: {md_escape(str(err))}")
        return None
    default_len = min(config.default_max_tokens or config.max_len, config.max_len)
    if int(st.session_state.get("max_len", default_len)) > config.max_len:
        st.session_state["max_len"] = config.max_len
    max_len = bar.slider(
        "Maximum length (tokens)",
        1,
        config.max_len,
        default_len,
        key="max_len",
        bind="query-params",
        help="Longer inputs are cut here; the page says when.",
    )
    return Selection(model_key, device, int(max_len))
