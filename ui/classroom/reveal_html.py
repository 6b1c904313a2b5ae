"""The reveal: the class's answers beside the model's own, as light HTML laid out by the browser alone (no
chart code, no JavaScript), the same on the projector and on every student's screen. In the 30-student browser
test a Plotly reveal figure cost a student's tab about 0.8 s of browser CPU (24 s for the class on one machine)
and the projector's 1.8 s at the reveal (the chart code compiled, the figure drawn), which kept the reveal from
reaching every screen within seconds.

* bars kinds (tokens, labels, next tokens, yes / no) — one row per option: its text, the model's number
  as a bar and its value (weight or probability; none for yes / no), the class's share as a bar and its
  count, and the marks (the model's answer, the class's favourite(s), yours) in their colours;
* heads — a table of layers × heads, each cell shaded by the role's score, with the score and how many
  students picked it; the model's head framed in black, the class's favourite(s) in orange dashes,
  yours in green dots;
* yes / no — the class's shares, and in the title what the model predicted and what the sentence is.

Pure functions: numbers in, an HTML string out. Every option text is HTML-escaped (an option is any token,
``<script>`` included); widths are CSS percentages; every text is at least the page's 17 px (``scale`` times
that in presenter mode).
"""

from __future__ import annotations

from html import escape

import numpy as np

from ..i18n import class_name_in, translate
from .questions import ROLE_NAMES, option_text

MODEL_COLOUR = "#1F4E99"  # dark blue
CLASS_COLOUR = "#E8730C"  # orange
YOU_COLOUR = "#0E7C3A"  # green
HEAT_LOW, HEAT_HIGH = (255, 255, 255), (107, 174, 214)  # a head's score 0 and 1 (rgb)
MARK_WORDS = {"model": "class.fig_model_pick", "class": "class.fig_class_pick", "you": "class.fig_your_pick"}
MARK_COLOURS = {"model": MODEL_COLOUR, "class": CLASS_COLOUR, "you": YOU_COLOUR}
HEAD_FRAMES = {"model": ("#000000", "solid"), "class": (CLASS_COLOUR, "dash"), "you": (YOU_COLOUR, "dot")}


def marks(answer: int, counts: list[int], mine: int | None) -> list[tuple[str, ...]]:
    """Per option (one per count), the marks it carries, in this order: "model" (the model's answer),
    "class" (every option tied for the most picks; none while nobody has answered), "you" (``mine``, the
    reader's own answer; None: the projector, or no answer). Written beside a bar, framed on a head."""
    most = max(counts, default=0)
    return [tuple(mark for mark, on in (("model", i == answer), ("class", most > 0 and count == most), ("you", i == mine))
                  if on) for i, count in enumerate(counts)]  # fmt: skip


def reveal_title(payload: dict, reveal: dict, lang: str) -> str:
    """The reveal's title in ``lang`` (what the model predicted, for yes / no; the role, for heads), its
    names HTML-escaped."""
    if payload["kind"] == "head_role":
        role = escape(translate(ROLE_NAMES[payload["role"]], lang))
        return translate("class.fig_title_heads", lang, role=role)
    if payload["kind"] == "correct":
        predicted = escape(class_name_in(reveal.get("predicted", ""), lang))
        return translate("class.fig_title_correct", lang, predicted=predicted,
                         truth=escape(class_name_in(payload["truth"], lang)))  # fmt: skip
    return translate("class.fig_title", lang)


ROOT_CLASS = "class-reveal"
BASE_PX = 17  # the app's base font size (.streamlit/config.toml)
BAR_ROOM = 78.0  # per cent of a bar's line the longest bar takes: the rest holds its number
BORDERS = {"solid": "solid", "dash": "dashed", "dot": "dotted"}  # Plotly's line dashes as CSS borders
FRAME_PX, FRAME_INSETS = 3, {"model": 0, "class": 4, "you": 8}  # a head's frames, nested inside its cell
LAYER_EM, HEAD_EM = 5.0, 3.6  # the grid's first column, and the least width of a head's column
STYLE = f"""<style>
.{ROOT_CLASS} {{ color: #111; line-height: 1.25; max-width: 62em; }}
.{ROOT_CLASS} .cr-title {{ font-weight: 700; font-size: 1.15em; margin: 0.2em 0 0.4em; }}
.{ROOT_CLASS} .cr-legend {{ margin: 0 0 0.4em; }}
.{ROOT_CLASS} .cr-legend span.cr-key {{ display: inline-block; width: 1.6em; height: 0.8em; margin: 0 0.3em 0 0.8em;
  vertical-align: middle; }}
.{ROOT_CLASS} .cr-legend span.cr-key:first-child {{ margin-left: 0; }}
.{ROOT_CLASS} table {{ border-collapse: collapse; width: 100%; table-layout: fixed; }}
.{ROOT_CLASS} th, .{ROOT_CLASS} td {{ border: none; padding: 0.15em 0.4em; text-align: left; vertical-align: middle;
  font-weight: 400; overflow-wrap: anywhere; }}
.{ROOT_CLASS} .cr-bars tr {{ border-top: 1px solid #D1D5DB; }}
.{ROOT_CLASS} .cr-line {{ display: flex; align-items: center; gap: 0.4em; min-height: 1.1em; }}
.{ROOT_CLASS} .cr-bar {{ flex: none; height: 0.9em; box-sizing: border-box; }}
.{ROOT_CLASS} .cr-mark {{ display: inline-block; margin-right: 0.5em; font-weight: 700; white-space: nowrap; }}
.{ROOT_CLASS} .cr-grid {{ overflow-x: auto; }}
.{ROOT_CLASS} .cr-heads th {{ text-align: center; word-break: keep-all; overflow-wrap: normal; padding: 0.15em 0.1em; }}
.{ROOT_CLASS} .cr-heads td {{ position: relative; padding: 12px 2px; text-align: center; border: 1px solid #E5E7EB;
  overflow-wrap: normal; }}
.{ROOT_CLASS} .cr-frame {{ position: absolute; pointer-events: none; }}
.{ROOT_CLASS} span.cr-ramp {{ display: inline-block; width: 8em; height: 0.8em; margin: 0 0.4em;
  vertical-align: middle; border: 1px solid #9CA3AF; }}
</style>"""


def reveal_html(
    payload: dict,
    reveal: dict,
    answer: int,
    counts: list[int],
    mine: int | None,
    lang: str,
    scale: float = 1.0,
) -> str:
    """The reveal of one question as HTML: ``reveal`` the model's numbers, ``answer`` its choice,
    ``counts`` the class's choices per option, ``mine`` this student's choice (None: no answer);
    ``scale`` the font scale (presenter mode)."""
    kind = payload["kind"]
    body = _head_table(payload, reveal, answer, counts, mine, lang) if kind == "head_role" else \
        _bar_rows(payload, reveal, answer, counts, mine, lang)  # fmt: skip
    return (f'{STYLE}<div class="{ROOT_CLASS}" data-kind="{escape(kind)}" style="font-size:{BASE_PX * scale:.0f}px">'
            f'<div class="cr-title">{reveal_title(payload, reveal, lang)}</div>{body}</div>')  # fmt: skip


def _mark_spans(row: tuple[str, ...], lang: str) -> str:
    return "".join(f'<span class="cr-mark" style="color:{MARK_COLOURS[m]}">{escape(translate(MARK_WORDS[m], lang))}'
                   "</span>" for m in row)  # fmt: skip


def _bar(value: float, top: float, colour: str, number: str, framed: bool = False) -> str:
    """One bar's line: a bar ``value / top`` of the room long, then its number."""
    frame = "outline:3px solid #000;outline-offset:-3px;" if framed else ""
    width = BAR_ROOM * min(max(value / top, 0.0), 1.0)
    return (f'<div class="cr-line"><span class="cr-bar" style="width:{width:.1f}%;background:{colour};{frame}">'
            f"</span><span>{number}</span></div>")  # fmt: skip


def _bar_rows(payload, reveal, answer, counts, mine, lang) -> str:
    """The legend, then one table row per option: text | the model's bar and the class's | marks."""
    n, yesno = len(payload["options"]), payload["kind"] == "correct"
    total = sum(counts)
    shares = [c / total if total else 0.0 for c in counts]
    values = (
        [0.0] * n if yesno else np.nan_to_num(np.asarray(reveal.get("values", [0.0] * n), dtype=np.float64)).tolist()
    )
    top = max(max(values, default=0.0), max(shares, default=0.0), 0.05)
    name = translate("class.fig_weight" if payload["kind"] == "attend" else "class.fig_probability", lang)
    keys = [] if yesno else [(MODEL_COLOUR, name)]
    legend = "".join(f'<span class="cr-key" style="background:{colour}"></span>{escape(text)}'
                     for colour, text in keys + [(CLASS_COLOUR, translate("class.fig_share", lang))])  # fmt: skip
    rows = []
    for i, row in enumerate(marks(answer, counts, mine)):
        bars = "" if yesno else _bar(values[i], top, MODEL_COLOUR, f"{values[i]:.3f}", framed=i == answer)
        bars += _bar(shares[i], top, CLASS_COLOUR, str(counts[i]))
        text = escape(option_text(payload, i, lang))
        rows.append(f'<tr data-option="{i}" data-marks="{" ".join(row)}"><th scope="row">{text}</th>'
                    f"<td>{bars}</td><td>{_mark_spans(row, lang)}</td></tr>")  # fmt: skip
    columns = '<colgroup><col style="width:30%"><col style="width:48%"><col style="width:22%"></colgroup>'
    return f'<div class="cr-legend">{legend}</div><table class="cr-bars">{columns}{"".join(rows)}</table>'


def _shade(score: float) -> str:
    """The heat map's colour for ``score`` (0 white … 1 blue, as the projector's colour scale)."""
    s = min(max(score, 0.0), 1.0)
    return "rgb({},{},{})".format(*(round(lo + (hi - lo) * s) for lo, hi in zip(HEAT_LOW, HEAT_HIGH)))


def _frames(row: tuple[str, ...]) -> str:
    """The frames of a head's cell, one per mark in ``row`` (the model's outermost, then the class's, then
    yours), laid over the cell: they take no room, so every cell is the same size."""
    spans = []
    for mark in row:
        colour, dash = HEAD_FRAMES[mark]
        spans.append(f'<span class="cr-frame" style="inset:{FRAME_INSETS[mark]}px;border:{FRAME_PX}px '
                     f'{BORDERS[dash]} {colour}"></span>')  # fmt: skip
    return "".join(spans)


def _head_table(payload, reveal, answer, counts, mine, lang) -> str:
    """What a cell holds and the score's colours, then the grid (layers down, heads across: each cell its
    score over its number of students, framed by its marks), then what the frames mean."""
    layers, heads = payload["layers"], payload["heads"]
    scores = np.nan_to_num(np.asarray(reveal.get("values", [0.0] * layers * heads), dtype=np.float64))
    scores = scores.reshape(layers, heads).tolist()  # floats: formatting numpy scalars cell by cell is slow
    per_cell = marks(answer, counts, mine)
    header = "".join(f"<th>{escape(translate('class.fig_head', lang, head=h + 1))}</th>" for h in range(heads))
    rows = [f'<colgroup><col style="width:{LAYER_EM}em"></colgroup><tr><th></th>{header}</tr>']
    for la in range(layers):
        cells = []
        for h in range(heads):
            i = la * heads + h
            cells.append(f'<td data-option="{i}" data-marks="{" ".join(per_cell[i])}" '
                         f'style="background:{_shade(scores[la][h])}">{scores[la][h]:.2f}<br><b>{counts[i]}</b>'
                         f"{_frames(per_cell[i])}</td>")  # fmt: skip
        label = escape(translate("class.fig_layer", lang, layer=la + 1))
        rows.append(f'<tr><th scope="row">{label}</th>{"".join(cells)}</tr>')
    ramp = f"background:linear-gradient(to right, rgb{HEAT_LOW}, rgb{HEAT_HIGH})"
    reading = escape(translate("class.fig_heads_cells", lang))
    scale = f'{escape(translate("class.fig_score", lang))}: 0<span class="cr-ramp" style="{ramp}"></span>1'
    key = f'<div class="cr-key-text">{escape(translate("class.fig_heads_key", lang))}</div>'
    width = f"min-width:{LAYER_EM + HEAD_EM * heads:.1f}em"  # a grid too wide for the screen scrolls, its text whole
    return (f'<div class="cr-legend">{reading} {scale}</div><div class="cr-grid">'
            f'<table class="cr-heads" style="{width}">{"".join(rows)}</table></div>{key}')  # fmt: skip
