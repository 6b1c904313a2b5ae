"""Presenter mode for a projector: larger text and figure fonts, the sidebar collapsed.

On with ``?present=1`` in the address (so a shared link keeps it) or the sidebar toggle.
Figure helpers scale their font sizes with :func:`figure_font_scale` (or take
:func:`figure_font_size` directly); outside a Streamlit run both leave sizes as they are, so
the figure functions stay pure enough for a notebook.
"""

from __future__ import annotations

PRESENT_KEY = "present"  # the query parameter
SESSION_KEY = "_present"
TOGGLE_KEY = "present_toggle"
# Figures use 16 px tick labels by default; a projector needs at least 22 px from the back row.
FIGURE_SCALE = 1.4
TEXT_SIZE_PX = 24
HEADLINE_PX = 48  # the headline prediction (st.metric's value): 38 px outside presenter mode
TABLE_ZOOM = 1.6  # tables: Streamlit's 14 px cells and headers to about 22 px

PRESENTER_CSS = f"""
<style>
  .stMainBlockContainer {{ font-size: {TEXT_SIZE_PX}px; max-width: 100%; padding-top: 2.5rem; }}
  .stMainBlockContainer p, .stMainBlockContainer li, .stMainBlockContainer label,
  .stMainBlockContainer [data-testid="stWidgetLabel"] p {{ font-size: {TEXT_SIZE_PX}px !important; }}
  .stMainBlockContainer [data-testid="stCaptionContainer"] p {{ font-size: {TEXT_SIZE_PX - 4}px !important; }}
  .stMainBlockContainer h1 {{ font-size: 2.6rem; }}
  .stMainBlockContainer h2 {{ font-size: 2.1rem; }}
  .stMainBlockContainer h3 {{ font-size: 1.8rem; }}
  .stMainBlockContainer textarea, .stMainBlockContainer input,
  .stMainBlockContainer [data-baseweb="select"] div,
  .stMainBlockContainer button p {{ font-size: {TEXT_SIZE_PX - 2}px !important; }}
  .stMainBlockContainer [data-testid="stTooltipIcon"] {{ display: none; }}
  /* The headline prediction must grow, not shrink to the 24 px that the p rule above gives every paragraph. */
  .stMainBlockContainer [data-testid="stMetricValue"],
  .stMainBlockContainer [data-testid="stMetricValue"] p,
  .stMainBlockContainer [data-testid="stMetricValue"] div {{ font-size: {HEADLINE_PX}px !important; line-height: 1.2; }}
  .stMainBlockContainer [data-testid="stMetricLabel"] p {{ font-size: {TEXT_SIZE_PX}px !important; }}
  .stMainBlockContainer [data-testid="stMetricDelta"] div,
  .stMainBlockContainer [data-testid="stMetricDelta"] p {{ font-size: {TEXT_SIZE_PX}px !important; }}
  /* A slider's value sits above its thumb: at 24 px it would cover the thumb. */
  .stMainBlockContainer [data-testid="stSliderThumbValue"] {{ font-size: {TEXT_SIZE_PX - 4}px; transform: translateY(-0.55em); }}
  .stMainBlockContainer [data-testid="stSlider"] {{ padding-top: 0.6em; }}
  /* A table (st.dataframe) is drawn on a canvas at Streamlit's 14 px, out of reach of font rules: zoom its frame
     {TABLE_ZOOM}x at 1/{TABLE_ZOOM} of its column's width, so that Streamlit sizes the canvas for that width and the
     zoomed canvas fills the column (zooming the table itself drew its columns {TABLE_ZOOM}x too wide: the projector
     showed three of the class's five). */
  .stMainBlockContainer [data-testid="stFullScreenFrame"]:has(> [data-testid="stDataFrame"]) {{
    zoom: {TABLE_ZOOM}; width: calc(100% / {TABLE_ZOOM}) !important; }}
  /* A popover ("Ask the class") opens outside the page's block: its text and controls grow the same way. */
  [data-testid="stPopoverBody"] {{ font-size: {TEXT_SIZE_PX}px; min-width: 32rem; }}
  [data-testid="stPopoverBody"] p, [data-testid="stPopoverBody"] label,
  [data-testid="stPopoverBody"] [data-testid="stWidgetLabel"] p {{ font-size: {TEXT_SIZE_PX}px !important; }}
  [data-testid="stPopoverBody"] input, [data-testid="stPopoverBody"] textarea,
  [data-testid="stPopoverBody"] [data-baseweb="select"] div,
  [data-testid="stPopoverBody"] button p {{ font-size: {TEXT_SIZE_PX - 2}px !important; }}
  [data-testid="stPopoverBody"] [data-testid="stCaptionContainer"] p {{ font-size: {TEXT_SIZE_PX - 4}px !important; }}
</style>
"""


# Streamlit leaves 6rem above every page: on a 1366 × 768 laptop (or at 150 % zoom) that pushes
# the main figure below the first screen.
# Plotly writes figure text in its own font list ("Open Sans", verdana, arial, sans-serif), not the theme's:
# a face named "Open Sans" that covers Hangul only gives figures the app's Hangul font (see
# scripts/build_hangul_font.py); Latin letters still fall through to the next fonts in plotly's list.
HANGUL_RANGE = "U+1100-11FF, U+3000-303F, U+3130-318F, U+AC00-D7A3, U+FF01-FF60"
FIGURE_HANGUL_CSS = "".join(
    f'@font-face {{ font-family: "Open Sans"; src: url("app/static/fonts/noto-sans-kr-hangul-{weight}.woff2") '
    f'format("woff2"); font-weight: {weight}; unicode-range: {HANGUL_RANGE}; font-display: swap; }} '
    for weight in (400, 700)
)
# Captions teach here (what a figure shows, how to read it): Streamlit's grey 14.9 px caption is about
# 4.5:1 on white, too faint for a projector (an option's caption is also drawn at 60 % opacity).
# #374151 at full opacity is 10.3:1 (WCAG AAA asks 7:1), at 16 px or more.
CAPTION_CSS = (
    '[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p '
    "{ color: #374151 !important; font-size: max(16px, 0.95rem); opacity: 1 !important; }"
)
COMPACT_CSS = f"<style> .stMainBlockContainer {{ padding-top: 2.5rem; }} {CAPTION_CSS} {FIGURE_HANGUL_CSS}</style>"


def apply_compact_style() -> None:
    """Less empty space above each page (call once per run)."""
    import streamlit as st

    from .i18n import current_lang
    from .widget_text import widget_text_css

    st.html(COMPACT_CSS.replace("</style>", widget_text_css(current_lang()) + "</style>"))


def presenting_from(query: str | None, session: bool | None) -> bool:
    """Presenter mode: the address's ``present=1|0`` first, then the session's toggle, else off."""
    if query in ("1", "true", "yes", "on"):
        return True
    if query in ("0", "false", "no", "off"):
        return False
    return bool(session)


def is_presenting() -> bool:
    """True when this session is in presenter mode (pages may fold examples and long help); False
    outside a Streamlit run (a notebook, a plain test)."""
    from .streamlit_internals import run_context

    if run_context() is None:
        return False
    from . import session

    return bool(session.value(SESSION_KEY).get(False))


def figure_font_scale() -> float:
    """How much figure fonts grow for this session: FIGURE_SCALE in presenter mode, else 1."""
    return FIGURE_SCALE if is_presenting() else 1.0


def figure_font_size(base: float) -> float:
    """``base`` (px) for this session: at least 22 px for 16 px tick labels in presenter mode."""
    return round(base * figure_font_scale(), 1)


def resolve_presenting() -> bool:
    """Work out presenter mode for this run (the shell calls this before ``st.set_page_config``)."""
    import streamlit as st

    from . import session

    on = presenting_from(st.query_params.get(PRESENT_KEY), session.value(SESSION_KEY).get())
    session.value(SESSION_KEY).set(on)
    return on


def _toggled() -> None:
    import streamlit as st

    from . import session

    on = bool(session.value(TOGGLE_KEY).get())
    session.value(SESSION_KEY).set(on)
    if on:
        st.query_params[PRESENT_KEY] = "1"
    else:
        st.query_params.pop(PRESENT_KEY, None)


def presenter_toggle(container, label: str, help_text: str) -> bool:
    """The sidebar switch for presenter mode, kept in step with the address; returns whether it is on."""
    import streamlit as st

    from . import session

    on = bool(session.value(SESSION_KEY).get(False))
    session.value(TOGGLE_KEY).set(on)
    container.toggle(label, key=TOGGLE_KEY, on_change=_toggled, help=help_text)
    if on and st.query_params.get(PRESENT_KEY) != "1":
        st.query_params[PRESENT_KEY] = "1"  # a page switch drops it from the address: put it back
    return on


def apply_presenter_style() -> None:
    """Larger text for the projector (call once per run in presenter mode)."""
    import streamlit as st

    st.html(PRESENTER_CSS)
