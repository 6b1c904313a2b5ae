"""Share the current view with the class: its address as a link and as a QR code, under a name.

The address already holds the view (sentence, model, layer, head, …, language, presenter mode);
the teacher's name for it travels as ``?preset=<name>`` and is shown on top of the page it opens.

The box is a fragment: typing a name, or opening the popover, reruns only the box, and the link is
built from the address at that moment, so a fragment elsewhere on the page that changed a
URL-bound widget since the last full run (Attention's layer, say) is in the link.
"""

from __future__ import annotations

import io
import os
import socket
import urllib.parse

import segno
import streamlit as st

from .echo import cut_to_limit
from .i18n import t
from .markdown import md_escape

PRESET_KEY = "preset"  # the query parameter
NAME_WIDGET = "share_name"
FALLBACK_BASE = "http://localhost:8501"
QR_SCALE = 6
POPOVER_KEY = "share_popover"


def base_url() -> str:
    """``scheme://host[:port]`` of the app as the browser sees it (``FALLBACK_BASE`` without a browser)."""
    try:
        url = st.context.url
    except Exception:  # noqa: BLE001 - AppTest and bare runs have no browser context
        url = None
    parts = urllib.parse.urlsplit(url or FALLBACK_BASE)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else FALLBACK_BASE


LOOPBACK = {"localhost", "127.0.0.1", "::1", "0.0.0.0", ""}


def network_address() -> str | None:
    """This machine's address on its network (the one students' machines reach), or None when it has
    none but loopback. A UDP socket's connect only picks the outgoing interface: nothing is sent."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: never routed anywhere, only looked up
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


LISTEN_ENV = "ATTENTION_LAB_LISTEN"  # the address the students' side listens on when it is not the app's own


def listening_address() -> str | None:
    """The address the class's browsers connect to: ``$ATTENTION_LAB_LISTEN`` when a proxy in front of the
    app listens there (scripts/classroom_server.sh sets it to nginx's address, its replicas listening on
    127.0.0.1), else Streamlit's ``server.address``."""
    return os.environ.get(LISTEN_ENV) or st.get_option("server.address")


def class_base(base: str, bound: str | None, lan: str | None) -> tuple[str, bool]:
    """(the ``scheme://host:port`` students can open, whether other machines can open it at all).

    ``base`` is the address the teacher's browser used; when that is this machine's own name
    (localhost, 127.0.0.1), the link names the server's network address ``lan`` instead, unless the
    server listens on loopback only (``bound``, Streamlit's ``server.address``) or has no network."""
    parts = urllib.parse.urlsplit(base)
    if (parts.hostname or "") not in LOOPBACK:
        return base, True
    if (bound or "") in LOOPBACK - {"0.0.0.0", ""} or lan is None:
        return base, False
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{lan}{port}", True


def view_url(base: str, url_path: str, params: dict[str, list[str]], name: str | None) -> str:
    """The address of a view: ``base/url_path?params`` with ``preset=name`` when a name is given."""
    query = {key: values for key, values in params.items() if key != PRESET_KEY}
    if name and name.strip():
        query[PRESET_KEY] = [name.strip()]
    encoded = urllib.parse.urlencode(query, doseq=True, quote_via=urllib.parse.quote)
    path = "/" + url_path.strip("/") if url_path else "/"
    return f"{base.rstrip('/')}{path}" + (f"?{encoded}" if encoded else "")


def qr_png(url: str) -> bytes | None:
    """A QR code of ``url`` as PNG bytes, or None when the address is too long for one."""
    try:
        code = segno.make(url, error="l", micro=False)
    except segno.DataOverflowError:
        return None
    buffer = io.BytesIO()
    code.save(buffer, kind="png", scale=QR_SCALE, border=2)
    return buffer.getvalue()


# st.cache_data, not ui.compute: a picture of an address, no model run (nothing for an analysis slot)
@st.cache_data(max_entries=256, show_spinner=False)
def cached_qr_png(url: str) -> bytes | None:
    """:func:`qr_png` by address (~17 ms of CPU to draw; an address depends only on the view, not the user)."""
    return qr_png(url)


def current_params() -> dict[str, list[str]]:
    """Every parameter in this run's address, all values of each."""
    return {key: st.query_params.get_all(key) for key in st.query_params}


def preset_banner() -> None:
    """When the address names a preset, say so above the page (students see which view they opened)."""
    name = st.query_params.get(PRESET_KEY)
    if name:
        st.info(t("share.opened_preset", name=md_escape(name)), icon=":material/bookmark:")


def share_box(container, url_path: str) -> None:
    """The 'share this view' popover in ``container`` (call after the page ran: the address then holds
    this run's choices)."""
    with container:
        share_panel(url_path)


@st.fragment(key="share_panel")
def share_panel(url_path: str) -> None:
    """A name, the link to copy, the QR code to scan. Opening the popover reruns this fragment (only),
    so the link is the address as it is when the popover opens, and the QR code is drawn then: every new
    sentence is a new address, and most runs never open the box."""
    box = st.popover(t("share.button"), icon=":material/share:", width="stretch", key=POPOVER_KEY, on_change="rerun")
    with box:
        # no max_chars: the browser would keep the old name in silence on a longer paste; cut here, said
        name, cut = cut_to_limit(st.text_input(t("share.name"), key=NAME_WIDGET, placeholder=t("share.name_hint")), 80)
        if cut:
            st.warning(cut)
        base, reachable = class_base(base_url(), listening_address(), network_address())
        url = view_url(base, url_path, current_params(), name)
        if not reachable:
            st.warning(t("share.local_only", host=urllib.parse.urlsplit(base).hostname or base))
        st.caption(t("share.link_caption"))
        st.code(url, language=None, wrap_lines=True)
        if not (box.open or name):  # a name is typed in the open box; closed, no QR code is drawn (~17 ms)
            return
        png = cached_qr_png(url)
        if png is None:
            st.warning(t("share.too_long", chars=len(url)))
        else:
            st.image(png, caption=t("share.qr_caption"), width=260)
