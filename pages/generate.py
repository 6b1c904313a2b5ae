"""Generate: a decoder-only language model continues a prompt one token at a time — next-token
probabilities, temperature / top-k / top-p, greedy or seeded sampling, each step's masked
self-attention per layer and head, which earlier token each head copies from, forcing a token,
switching heads off; or, for a model with a chat template (SmolLM2-Instruct), answers a question
token by token and shows where each answer token's attention went in the question."""

import numpy as np
import pandas as pd
import streamlit as st

from transformer.lm.decode import MAX_STEPS
from transformer.lm.sampling import MAX_TEMPERATURE, Sampling
from ui import chat, session
from ui.charts import show
from ui.classroom.ask import ask_next_token
from ui.continuation import bars_with_chosen, continuation_html, copy_rows, layer_windows
from ui.figure_cache import shared_figures
from ui.figures import generate as generate_figures
from ui.generate_chat import chat_view, cut_text, language_note, model_or_stop, question_box
from ui.i18n import current_lang, t
from ui.language_models import (
    about_short,
    attention_notes,
    example_prompt,
    is_pretrained,
    korean_default_note,
    language_models,
    load_lm,
    next_distribution,
    prefix_attention,
    prompt_of,
    rows_of,
    run_generation,
    start_token,
    token_text,
)
from ui.markdown import md_escape, token_chips
from ui.navigation import ensure_shell
from ui.readable_tokens import model_piece, tokens_shown
from ui.steps import advance_if_playing, step_navigator

figs = shared_figures(generate_figures)  # figures built once for every session with the same inputs

PROMPT_KEY = "gen_prompt"
MAX_CHARS = 4000  # the prompt and question boxes: a longer text is cut with a message
SHOWN = 10  # bars in the next-token figure
HOT = 100.0  # temperatures above this flatten the distribution to nearly uniform


def choose_model() -> str:
    names = language_models()
    if not names:
        st.info(t("generate.no_model"))
        st.stop()
    if len(names) == 1:
        return names[0]
    picked = session.chosen_model()  # an imported GPT-2 picked in the sidebar is the first offered here
    first = names.index(picked) if picked in names else 0
    return st.radio(t("generate.model"), names, index=first, key="gen_model", horizontal=True,
                    help=t("generate.model_help"))  # fmt: skip


def model_captions(name: str, loaded) -> None:
    """What the model is (SmolLM2: pretrained by others, English only; review-lm: trained here from
    nothing), and in Korean why the page starts on review-lm."""
    st.caption(about_short(name, loaded, session.is_upload(name)))
    if note := korean_default_note(name):
        st.caption(note)


def choose_view(loaded) -> str:
    """Continue a text, or (a model with a chat template) ask it a question."""
    if not chat.has_chat(loaded):
        return "continue"
    views = {"continue": t("generate.view_continue"), "chat": t("generate.view_chat")}
    chosen = st.segmented_control(t("generate.view"), list(views), format_func=views.get, key="gen_view",
                                  default="continue", help=t("generate.view_help"))  # fmt: skip
    return chosen or "continue"


PREPEND_KEY = "gen_prepend_start"  # an imported model's start token put before the text (off: its tokenizer's own)


def imported_caption(name: str, device: str) -> bool:
    """What an imported model reads first; True when the student asked for its start token before the text."""
    if not session.is_upload(name):
        return False
    start = start_token(name, device)
    if start is None:
        st.caption(t("generate.imported_no_start", name=md_escape(name)))
        return False
    st.caption(t("generate.imported_start", name=md_escape(name), start=md_escape(start)))
    return st.checkbox(t("generate.prepend_start", start=start), key=PREPEND_KEY, value=False)


def prompt_ids(name: str, device: str, max_len: int, prepend: bool = False) -> tuple[list[int], list[str]]:
    """The prompt box; stops the page with a message when the prompt cannot be run."""
    linked = st.query_params.get(PROMPT_KEY)
    if linked and linked != session.PROMPT_FROM_ADDRESS.get():  # a new link or lesson step names a prompt: it wins
        session.PROMPT_FROM_ADDRESS.set(linked)
        st.session_state[PROMPT_KEY] = linked
    if PROMPT_KEY not in st.session_state and not linked:
        st.session_state[PROMPT_KEY] = example_prompt(name)
    label = t("generate.prompt_english" if is_pretrained(name) else "generate.prompt")  # SmolLM2 reads English only
    text = st.text_area(label, key=PROMPT_KEY, height=80, help=t("generate.prompt_help"),
                        bind="query-params")  # fmt: skip
    text = cut_text(text, MAX_CHARS)
    prompt = prompt_of(name, device, text if text.strip() else "", prepend_start=prepend)
    if not prompt.ids:  # an imported model without a start token has nothing to continue
        st.info(t("generate.empty_no_start"))
        st.stop()
    if not text.strip():
        st.info(t("generate.empty_prompt") if not session.is_upload(name) else t("generate.empty_imported"))
    if len(prompt.ids) >= max_len:
        st.error(t("generate.too_long", n=len(prompt.ids) - 1, most=max_len - 2, cut=len(prompt.ids) - max_len + 1))
        st.stop()
    loaded = load_lm(name, device)  # the chips spell what each piece stands for (a byte of 😀 as <F0>, say)
    special = [model_piece(loaded, int(i))[2] for i in prompt.ids]
    st.markdown(token_chips(tokens_shown(loaded, prompt.ids), [False] * len(prompt.ids), special=special))
    st.caption(t("generate.chips_caption", n=len(prompt.ids)))
    language_note(name, device, text)
    return prompt.ids, prompt.tokens


def sampling_controls(room: int) -> tuple[Sampling, int]:
    """Greedy or sampling, temperature, top-k, top-p, seed and the number of steps, stacked for a side
    column; says where a setting is bounded."""
    c1 = st.container()
    c2, c3 = st.columns(2)
    c4, c5 = st.columns(2)
    c6 = st.container()
    modes = {"greedy": t("generate.greedy"), "sample": t("generate.sample")}
    mode = c1.radio(
        t("generate.mode"), list(modes), format_func=modes.get, key="gen_mode", help=t("generate.mode_help")
    )
    sampling = mode == "sample"
    temperature = c2.number_input(t("generate.temperature"), 0.0, MAX_TEMPERATURE, 1.0, 0.1, key="gen_temperature",
                                  disabled=not sampling, help=t("generate.temperature_help"))  # fmt: skip
    top_k = c3.number_input(t("generate.top_k"), 0, 100_000, 0, 1, key="gen_top_k", disabled=not sampling,
                            help=t("generate.top_k_help"))  # fmt: skip
    top_p = c4.number_input(t("generate.top_p"), 0.0, 1.0, 1.0, 0.05, key="gen_top_p", disabled=not sampling,
                            help=t("generate.top_p_help"))  # fmt: skip
    seed = c5.number_input(t("generate.seed"), 0, 2**31 - 1, 0, 1, key="gen_seed", disabled=not sampling)
    steps = c6.number_input(t("generate.steps"), 1, 10_000, 20, 1, key="gen_steps", help=t("generate.steps_help"))
    if sampling and temperature == 0:
        st.info(t("generate.temperature_zero"))
    elif sampling and temperature > HOT:
        st.info(t("generate.temperature_hot", temperature=f"{temperature:g}"))
    if sampling and top_p == 0:
        st.info(t("generate.top_p_zero"))
    if steps > min(room, MAX_STEPS):
        st.info(t("generate.steps_bounded", asked=f"{int(steps):,}", room=min(room, MAX_STEPS)))
    settings = Sampling(not sampling, float(temperature), int(top_k), float(top_p), int(seed))
    return settings, int(steps)


def head_gates(cfg) -> tuple[tuple[tuple[float, ...], ...] | None, list[str]]:
    """The heads-off menu; returns the gates (L x H, 1 = on) or None, and the labels switched off."""
    labels = {
        f"{layer + 1}.{head + 1}": (layer, head) for layer in range(cfg.num_layers) for head in range(cfg.num_heads)
    }
    off = st.multiselect(t("generate.heads_off"), list(labels), key="gen_heads_off", help=t("generate.heads_off_help"),
                         placeholder=t("widgets.choose"))  # fmt: skip
    if not off:
        return None, []
    grid = np.ones((cfg.num_layers, cfg.num_heads))
    for label in off:
        grid[labels[label]] = 0.0
    return tuple(tuple(float(g) for g in row) for row in grid), off


def forced_tokens(prompt: tuple[int, ...]) -> dict[int, int]:
    """This prompt's forced tokens {step index: id}; forgotten when the prompt changes."""
    kept = session.FORCED_TOKENS.get()
    if not kept or kept.get("prompt") != prompt:
        session.FORCED_TOKENS.set({"prompt": prompt, "tokens": {}})
    return session.FORCED_TOKENS.get()["tokens"]


def _force(index: int, choice_key: str, options: dict[str, int]) -> None:
    session.FORCED_TOKENS.get()["tokens"][index] = options[st.session_state[choice_key]]
    # later forced tokens belonged to the old continuation
    tokens = session.FORCED_TOKENS.get()["tokens"]
    for later in [k for k in tokens if k > index]:
        del tokens[later]


def _clear_forced() -> None:
    session.FORCED_TOKENS.get()["tokens"] = {}


def continuation_block(name, device, result, plain_ids) -> None:
    """The prompt and what the model wrote after it; the unforced continuation beside it when tokens were forced."""
    new = result.ids[result.prompt_length :]
    text = load_lm(name, device).lm_tokenizer
    st.subheader(t("generate.output_title"))  # no rule under it: the chart below starts on the first screen
    written = text.decode(new, skip_special_tokens=True)
    st.html(continuation_html(text.decode(result.ids[: result.prompt_length], skip_special_tokens=True), written))
    reasons = {"steps": "generate.stopped_steps", "context": "generate.stopped_context",
               "limit": "generate.stopped_limit", "end": "generate.stopped_end"}  # fmt: skip
    st.caption(t(reasons[result.stopped], n=len(new), context=load_lm(name, device).config.max_len))
    if plain_ids is not None:
        st.caption(t("generate.unforced", text=md_escape(text.decode(plain_ids[result.prompt_length :]))))


def step_view(name, device, result, gates, off, sampling: bool, lang, where) -> None:
    """One step of the generation: its next-token chart, chosen token and navigator in ``where`` (the
    column beside the controls), then across the page each head's masked row (a few layers at a time),
    forcing a token, the copy table, the masks and the heads-off shift."""
    count = len(result.steps)
    if count == 0:
        return
    with where:
        number, step, chosen = step_header(name, device, result, sampling, lang)
    prefix_ids = result.ids[: step.position]
    prefix = tokens_shown(load_lm(name, device), prefix_ids)
    notes, kv_heads = attention_notes(load_lm(name, device).config, t("generate.kv_rows"))
    for note in notes:
        st.caption(note)
    attention = rows_of(name, device, step, prefix_ids, gates)  # (L, H, T)
    first, last = choose_layers(attention.shape[0])
    show(fig=figs.head_rows_heatmap(attention[first - 1 : last], prefix, lang, kv_heads, first - 1), key="gen_rows")
    force_menu(name, device, step, number)
    copy_table(step, attention, prefix, prefix_ids, chosen, range(first - 1, last))
    mask_section(name, device, prefix_ids, prefix, gates, lang)
    if off:
        shift_section(name, device, prefix_ids, gates, off, lang)
    advance_if_playing("gen_step", count)


def choose_layers(n_layers: int) -> tuple[int, int]:
    """The layers whose heads are drawn: all of a small model, a window of a few on a deep one (30 layers
    x 9 heads would be 270 unreadable rows)."""
    windows = layer_windows(n_layers)
    if len(windows) == 1:
        return windows[0]
    return st.selectbox(t("generate.layers_shown"), windows, key="gen_layers", format_func=lambda w: f"{w[0]}–{w[1]}",
                        help=t("generate.layers_help", layers=n_layers))  # fmt: skip


def step_header(name, device, result, sampling: bool, lang):
    """The next-token chart of the step (the chosen token always among its bars) and what the step chose,
    above the step navigator (drawn first: it decides the step); returns (number, step, chosen token)."""
    above = st.container()
    number = step_navigator(t("generate.step"), len(result.steps), 1, key="gen_step", slider_share=2)
    step = result.steps[number - 1]
    chosen = token_text(name, device, step.token_id)
    bars = bars_with_chosen(step, SHOWN, sampling)
    tops = [token_text(name, device, i) for i in bars.ids]
    how = t("generate.how_forced") if step.forced else t("generate.how_model")
    message = t("generate.step_chosen", step=number, token=md_escape(chosen), p=step.chosen_prob, how=how)
    if step.chosen_rank >= SHOWN:
        message += " " + t("generate.step_outside", rank=step.chosen_rank + 1)
    if sampling:
        message += " " + t("generate.step_kept", kept=f"{step.kept:,}")
    with above:
        show(fig=figs.next_token_bars(tops, bars.probs, bars.filtered, bars.chosen, lang, bars.ranks), key="gen_next")
        st.markdown(message)
    return number, step, chosen


def force_menu(name, device, step, number) -> None:
    options = {token_text(name, device, int(i)): int(i) for i in step.top_ids if int(i) != step.token_id}
    c1, c2, c3 = st.columns([3, 1, 1], vertical_alignment="bottom")
    choice_key = "gen_force_choice"
    c1.selectbox(t("generate.force", step=number), list(options), key=choice_key, help=t("generate.force_help"))
    c2.button(t("generate.force_button"), key="gen_force_go", on_click=_force, args=(number - 1, choice_key, options))
    c3.button(t("generate.force_clear"), key="gen_force_clear", on_click=_clear_forced,
              disabled=not session.FORCED_TOKENS.get()["tokens"])  # fmt: skip


def copy_table(step, attention, prefix, prefix_ids, chosen, layers: range) -> None:
    """Per head of the layers shown: the earlier token it attends to most, the weight, and whether the
    new token copies that token or the one after it (the induction pattern)."""
    copies = {"same": t("generate.copy_same"), "next": t("generate.copy_next"), "": ""}
    rows = [{t("generate.col_head"): f"{layer + 1}.{head + 1}", t("generate.col_source"): f"{j}: {prefix[j]}",
             t("generate.col_weight"): round(weight, 3), t("generate.col_copies"): copies[kind]}
            for layer, head, j, weight, kind in copy_rows(attention, prefix_ids, step.token_id, layers)]  # fmt: skip
    st.markdown(t("generate.copy_title", token=md_escape(chosen)))
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.caption(t("generate.copy_caption"))


def mask_section(name, device, prefix_ids, prefix, gates, lang) -> None:
    cfg = load_lm(name, device).config
    c1, c2 = st.columns(2)
    layer = c1.selectbox(t("generate.layer"), list(range(1, cfg.num_layers + 1)), key="gen_layer")
    head = c2.selectbox(t("generate.head"), list(range(1, cfg.num_heads + 1)), key="gen_head")
    matrix = prefix_attention(name, device, tuple(prefix_ids), layer - 1, gates)[head - 1]
    title = t("generate.fig_matrix_title", layer=layer, head=head)
    show(fig=figs.masked_self_attention(matrix, prefix, title, lang), key="gen_mask")
    st.caption(t("generate.mask_caption"))


def shift_section(name, device, prefix_ids, gates, off, lang) -> None:
    before = next_distribution(name, device, tuple(prefix_ids))
    after = next_distribution(name, device, tuple(prefix_ids), gates)
    order = np.argsort(-np.maximum(before, after), kind="stable")[:SHOWN]
    labels = [token_text(name, device, int(i)) for i in order]
    st.markdown(t("generate.shift_title", heads=", ".join(off)))
    show(fig=figs.distribution_shift(labels, before[order], after[order], lang), key="gen_shift")
    distance = 0.5 * float(np.abs(before.astype(np.float64) - after).sum())
    st.caption(t("generate.shift_caption", distance=distance))


ensure_shell()  # a deep link runs the navigation and sidebar first
lang = current_lang()
st.title(t("generate.title"), help=t("generate.intro"))  # the help, not a line: the figures start higher
selection = session.selection()
device = selection.device if selection is not None else "cpu"
# The model and the controls in a column, the continuation (or the chat) and its main chart beside them,
# from the top: on the first screen.
controls, output = st.columns([1, 2], gap="medium")
with controls:
    name = choose_model()
    loaded = model_or_stop(name, device)  # a server folder's file the reader refuses: one message, not a crash
    model_captions(name, loaded)
    cfg = loaded.config
    view = choose_view(loaded)
    if view == "chat":
        question = question_box(name, device, MAX_CHARS)
        settings, steps = sampling_controls(cfg.max_len)
    else:
        prepend_start = imported_caption(name, device)
        ids, tokens = prompt_ids(name, device, cfg.max_len, prepend_start)
        settings, steps = sampling_controls(cfg.max_len - len(ids))
        gates, off = head_gates(cfg)
        ask_next_token(name, device, ids)  # a teacher's only
if view == "chat":
    chat_view(name, device, question, settings, steps, lang, output)
else:
    forced = forced_tokens(tuple(ids))
    result = run_generation(name, device, tuple(ids), steps, settings, tuple(sorted(forced.items())), gates)
    plain = None
    if forced:
        plain = run_generation(name, device, tuple(ids), steps, settings, (), gates).ids
    with output:
        continuation_block(name, device, result, plain)
    step_view(name, device, result, gates, off, not settings.picks_the_top, lang, output)
