"""Translate: an encoder-decoder trained here (or imported: a Marian translator, say), its
cross-attention (against the gold word alignment for the bundled tasks), and decoding one token at a
time (prefix, masked self-attention, cross-attention, next-token probabilities, sampling, forcing a
token, heads switched off)."""

import numpy as np
import streamlit as st

from transformer.analysis.language_check import check_text, model_languages
from transformer.hf.spm import readable
from transformer.translation import get_task
from transformer.translation.alignment import reference_alignment, sentence_scores
from transformer.translation.checks import Problem, check
from transformer.translation.decode import DecodeOptions
from ui import session, translation_models
from ui.charts import show
from ui.classroom.ask import ask_next_word
from ui.figure_cache import shared_figures
from ui.figures import translation as translation_figures
from ui.i18n import current_lang, t
from ui.language import message as language_message
from ui.markdown import md_escape, token_chips
from ui.models import current_selection
from ui.page_style import hide_text_model_picker
from ui.steps import advance_if_playing, step_navigator
from ui.translation_models import (
    TRANSLATION_MODELS,
    cross_attention,
    has_task,
    load_translation,
    model_for,
    output_text,
    run_decoding,
    source_tokens,
    target_token,
)

figs = shared_figures(translation_figures)  # figures built once for every session with the same inputs

MODEL_KEY, TEXT_KEY, EXAMPLE_KEY = "tr_model", "tr_text", "tr_example"
TOP_K = 8
IMPORTED_TEXT = session.value("tr_imported_text")  # the sentence box for models without example pairs


def choose_model(sidebar_key: str) -> str:
    """The model radio; follows the sidebar when the sidebar picks a translation model."""
    name, own = model_for(sidebar_key)
    if own and session.TRANSLATE_SIDEBAR.get() != sidebar_key:
        st.session_state[MODEL_KEY] = sidebar_key
    session.TRANSLATE_SIDEBAR.set(sidebar_key)
    options = translation_models.translation_models()
    if st.session_state.get(MODEL_KEY) not in options:
        from_link = st.query_params.get(MODEL_KEY)  # a shared link names the model
        st.session_state[MODEL_KEY] = from_link if from_link in options else name
    names = {"en-ko-order": t("translate.model_word_order"), "dates": t("translate.model_dates")}
    chosen = st.radio(t("translate.model"), options, format_func=lambda n: names.get(n, n), key=MODEL_KEY,
                      horizontal=True, bind="query-params", label_visibility="collapsed")  # fmt: skip
    hide_text_model_picker()  # this radio is the page's one model picker
    return chosen


def _use_example() -> None:
    st.session_state[TEXT_KEY] = st.session_state[EXAMPLE_KEY]


def choose_imported_text() -> tuple[str, dict]:
    """The input of a model without example pairs (an imported translator): a plain sentence box."""
    if not IMPORTED_TEXT.get("").strip():
        IMPORTED_TEXT.set(t("translate.imported_example"))
    text = st.text_input(t("translate.imported_input"), key=IMPORTED_TEXT.key, help=t("translate.imported_input_help"))
    return text.strip(), {}


def choose_text(task) -> tuple[str, dict]:
    """The English input (typed, or an example); returns it and {example text: gold pair}."""
    if task is None:
        return choose_imported_text()
    gold = {p.text: p for p in task.examples()}
    previous = session.TRANSLATE_TASK.get()
    if previous is None and st.query_params.get(TEXT_KEY):  # a shared link's sentence
        st.session_state.setdefault(TEXT_KEY, st.query_params[TEXT_KEY])
    if not st.session_state.get(TEXT_KEY, "").strip() or previous not in (None, task.name):
        st.session_state[TEXT_KEY] = next(iter(gold))
        st.session_state[EXAMPLE_KEY] = next(iter(gold))
    session.TRANSLATE_TASK.set(task.name)
    left, right = st.columns([3, 2])
    text = left.text_input(t("translate.input"), key=TEXT_KEY, help=t("translate.input_help"), bind="query-params")
    right.selectbox(t("translate.example"), list(gold), key=EXAMPLE_KEY, on_change=_use_example)
    return text.strip(), gold


def tokens_or_stop(name: str, device: str, text: str, where):
    """The source tokens as chips in ``where`` (a column); stops the page when there is no word."""
    tokens, ids, unknown, cut = source_tokens(name, device, text)
    if not ids:
        st.info(t("translate.no_words"))
        st.stop()
    where.caption(f"**{t('translate.tokens_title')}**")
    where.markdown(token_chips(tokens, unknown))
    where.caption(t("translate.chips_legend"))
    if cut:
        where.warning(t("translate.truncated", cut=cut, kept=len(tokens)))
    return tokens, ids, unknown


def writer(task):
    """How the output sentence is written: the task's way (Korean particles attached to their
    nouns), else words joined by spaces. Token views show the tokens as produced."""
    return task.written if task is not None else None


def translation_block(task, loaded, decoding, gold_pair, where) -> list[str]:
    """The greedy translation (and the expected one for an example) in ``where`` (the column beside the
    cross-attention heatmap); returns the produced tokens."""
    produced = [target_token(loaded, i) for i in decoding.output_ids]
    words = [w for w in produced if w != "<eos>"]
    where.caption(f"**{t('translate.greedy_title')}**")
    where.markdown(f"### {md_escape(output_text(loaded, decoding.output_ids, write=writer(task)))}")
    if task is None:
        where.caption(t("translate.imported_pieces", pieces=" ".join(md_escape(w) for w in produced)))
    if gold_pair is not None:
        expected = task.written(gold_pair.target)
        key = "translate.matches_gold" if tuple(words) == gold_pair.target else "translate.differs_gold"
        where.caption(t(key, expected=md_escape(expected)))
    return produced


def language_note(loaded, text: str, where) -> None:
    """Say so when most of the source is in a script the model was not trained on (a dates model
    reads numbers: a text of numbers only is its own)."""
    found = check_text(text, model_languages(loaded.metrics), loaded.config.tokenizer == "digits")
    if found.code == "other_script":
        where.warning(language_message(found))


PROBLEM_KEYS = {
    "unknown_words": "translate.problem_unknown_words", "not_a_date": "translate.problem_not_a_date",
    "year_range": "translate.problem_year_range", "impossible_input": "translate.problem_impossible_input",
    "impossible_output": "translate.problem_impossible_output", "disagrees": "translate.problem_disagrees",
    "outside_grammar": "translate.problem_outside_grammar", "incomplete": "translate.problem_incomplete",
}  # fmt: skip
EXPECTED_KEYS = {
    "article": "translate.expect_article", "adjective-or-noun": "translate.expect_adjective_or_noun",
    "noun": "translate.expect_noun", "verb": "translate.expect_verb", "place": "translate.expect_place",
    "end": "translate.expect_end",
}  # fmt: skip


def problem_text(p: Problem) -> str:
    """One problem of :func:`transformer.translation.checks.check` in the page's language."""
    words = ", ".join(f"**{md_escape(w)}**" for w in p.words)
    if p.code == "not_a_date" and p.words:
        return t("translate.problem_not_a_date_words", words=words)
    values = {
        "words": words, "year": words, "date": p.reading, "output": md_escape(p.output), "reading": p.reading,
        "position": p.position, "word": md_escape(p.words[0]) if p.words else "", "grammar": t("translate.grammar"),
        "expected": t(EXPECTED_KEYS[p.expected]) if p.expected else "",
    }  # fmt: skip
    return t(PROBLEM_KEYS[p.code], **values)


def trust_block(task, tokens, unknown, produced, where) -> None:
    """What makes this translation unreliable, if anything (unknown words, a sentence outside the
    grammar, an input or output that is no real date), each as a warning."""
    output = task.joiner.join(w for w in produced if w != "<eos>")
    for problem in check(task.name, tokens, unknown, output).problems:
        where.warning(t("translate.unreliable") + " " + problem_text(problem), icon=":material/warning:")


def layer_head(cfg, metrics: dict, where) -> tuple[int, int]:
    """Layer and head selectors (1-based on screen) in ``where``, starting at the best head on held-out pairs."""
    best = metrics.get("best_head") or {"layer": cfg.num_decoder_layers - 1, "head": 0}
    c1, c2 = where.columns(2)
    layers, heads = list(range(1, cfg.num_decoder_layers + 1)), list(range(1, cfg.num_heads + 1))
    for key, options in (("tr_layer", layers), ("tr_head", heads)):
        if key in st.session_state and st.session_state[key] not in options:
            del st.session_state[key]
    layer = c1.selectbox(t("translate.layer"), layers, index=min(best["layer"], len(layers) - 1), key="tr_layer")
    head = c2.selectbox(t("translate.head"), heads, index=min(best["head"], len(heads) - 1), key="tr_head")
    return layer - 1, head - 1


def cross_section(name, device, ids, tokens, decoding, produced, task, lang, left, right) -> tuple[int, int]:
    """The cross-attention heatmap of one head in ``left``; its layer and head selectors and every head's
    alignment score in ``right`` (under the source tokens and the translation). Returns (layer, head)."""
    loaded = load_translation(name, device)
    metrics = loaded.metrics or {}
    layer, head = layer_head(loaded.config, metrics, right)
    prefix = decoding.ids[: len(produced)]  # <bos> + every produced token but the last: one row per produced token
    cross = cross_attention(name, device, tuple(ids), tuple(prefix))
    if task is None:  # no gold alignment to score the heads against
        show(where=left, fig=figs.cross_attention_heatmap(cross[layer, head], tokens, produced, None, layer + 1,
                                                          head + 1, None, lang), key="tr_cross")  # fmt: skip
        left.caption(t("translate.cross_caption_imported"))
        right.info(t("translate.no_gold_note"), icon=":material/info:")
        return layer, head
    alignment = reference_alignment(task.name, tokens, produced)
    scores = sentence_scores(cross, alignment)
    show(where=left, fig=
        figs.cross_attention_heatmap(cross[layer, head], tokens, produced, alignment, layer + 1, head + 1,
                                     float(scores[layer, head]), lang), key="tr_cross")  # fmt: skip
    left.caption(t("translate.cross_caption"))  # how to read it, under the figure rather than above it
    show(where=right, fig=figs.head_scores_heatmap(scores, lang), key="tr_scores")
    best = metrics.get("best_head")
    right.caption(t("translate.scores_caption"))
    if best:
        right.caption(t("translate.scores_heldout", layer=best["layer"] + 1, head=best["head"] + 1,
                        accuracy=best["accuracy"], exact=metrics.get("exact_match", 0.0)))  # fmt: skip
    return layer, head


def decode_options(cfg, target, teacher_ids) -> DecodeOptions:
    """The step-by-step controls; returns the options they describe."""
    c1, c2, c3, c4 = st.columns(4)
    modes = {"free": t("translate.mode_free"), "teacher": t("translate.mode_teacher")}
    mode = c1.radio(t("translate.mode"), list(modes), format_func=modes.get, key="tr_mode",
                    disabled=teacher_ids is None, help=t("translate.mode_help"))  # fmt: skip
    strategies = {"greedy": t("translate.greedy"), "sample": t("translate.sample")}
    strategy = c2.radio(t("translate.strategy"), list(strategies), format_func=strategies.get, key="tr_strategy")
    temperature = c3.slider(t("translate.temperature"), 0.1, 2.0, 1.0, 0.1, key="tr_temperature",
                            help=t("translate.temperature_help"))  # fmt: skip
    seed = c4.number_input(t("translate.seed"), 0, 10_000, 0, key="tr_seed", disabled=strategy != "sample")
    heads = [(layer, head) for layer in range(cfg.num_decoder_layers) for head in range(cfg.num_heads)]
    labels = {f"{layer + 1}.{head + 1}": (layer, head) for layer, head in heads}
    off = st.multiselect(t("translate.heads_off"), list(labels), key="tr_heads_off", help=t("translate.heads_off_help"),
                         placeholder=t("widgets.choose"))  # fmt: skip
    gates = None
    if off:
        grid = np.ones((cfg.num_decoder_layers, cfg.num_heads))
        for label in off:
            grid[labels[label]] = 0.0
        gates = tuple(tuple(float(g) for g in row) for row in grid)
    forced = force_controls(target)
    teacher = tuple(teacher_ids) if mode == "teacher" and teacher_ids is not None else None
    return DecodeOptions(strategy, float(temperature), int(seed), forced, teacher, gates)


def force_controls(target) -> dict[int, int]:
    c1, c2, c3 = st.columns([1, 1, 2])
    on = c1.toggle(t("translate.force"), key="tr_force", help=t("translate.force_help"))
    step = c2.number_input(t("translate.force_step"), 1, 40, 1, key="tr_force_step", disabled=not on)
    if len(target) > translation_models.MAX_LISTED_TOKENS:
        return typed_force(target, int(step), on, c3)
    words = [w for w in target.itos if w not in ("<unk>", "<pad>", "<bos>")]
    token = c3.selectbox(t("translate.force_token"), words, key="tr_force_token", disabled=not on)
    return {int(step) - 1: target.token_to_id(token)} if on else {}


def typed_force(target, step: int, on: bool, where) -> dict[int, int]:
    """A large vocabulary's token to force, typed as its piece (``▁`` or ``␣`` for a word start)."""
    piece = where.text_input(t("translate.force_piece"), key="tr_force_piece", disabled=not on,
                             help=t("translate.force_piece_help")).strip().replace("␣", "▁")  # fmt: skip
    if not on or not piece:
        return {}
    found = target.token_to_id(piece) if piece in target else None
    if found is None and "▁" + piece in target:
        found = target.token_to_id("▁" + piece)
    if found is None:
        where.warning(t("translate.force_piece_unknown", piece=md_escape(piece)))
        return {}
    return {step - 1: found}


def teacher_target(task, gold_pair, target) -> list[int] | None:
    """The gold target ids (``<eos>`` last) when the sentence is an example, else None."""
    if gold_pair is None:
        return None
    return [target.token_to_id(w) for w in gold_pair.target] + [target.token_to_id("<eos>")]


def step_section(name, device, ids, tokens, task, gold_pair, layer, head, lang, source: str) -> None:
    st.subheader(t("translate.steps_title"), divider="gray")
    st.caption(t("translate.steps_caption"))
    loaded = load_translation(name, device)
    target = loaded.target_vocab
    options = decode_options(loaded.config, target, teacher_target(task, gold_pair, target))
    decoding = run_decoding(name, device, tuple(ids), options)
    written = output_text(loaded, decoding.output_ids, write=writer(task))
    st.markdown(t("translate.steps_output", text=md_escape(written)))
    if options.forced or options.cross_gates:
        greedy = run_decoding(name, device, tuple(ids), DecodeOptions(teacher=options.teacher))
        greedy_text = output_text(loaded, greedy.output_ids, write=writer(task))
        st.caption(t("translate.steps_compare", text=md_escape(greedy_text)))
    count = len(decoding.steps)
    # start at the last word before <eos> (for word order the verb, which jumps back in the source)
    step_no = step_navigator(t("translate.step"), count, max(1, count - 1), key="tr_step")
    step = decoding.steps[step_no - 1]
    show_step(step, decoding, tokens, loaded, task, layer, head, lang)
    written = output_text(loaded, step.prefix[1:], write=writer(task))  # the prefix after <bos>, as text
    ask_next_word(name, source, written, step.probs, lambda i: readable(loaded.target_vocab.itos[i]))
    advance_if_playing("tr_step", count)


def show_step(step, decoding, tokens, loaded, task, layer, head, lang) -> None:
    target = loaded.target_vocab
    prefix = [target_token(loaded, i) for i in step.prefix]
    st.markdown(t("translate.step_prefix", t=step.t + 1) + " " + token_chips(prefix, [False] * len(prefix)))
    how = {
        "model": t("translate.how_model"),
        "forced": t("translate.how_forced"),
        "teacher": t("translate.how_teacher"),
    }
    st.markdown(t("translate.step_chosen", token=md_escape(target_token(loaded, step.chosen)), how=how[step.how],
                  predicted=md_escape(target_token(loaded, step.predicted)), p=float(step.probs[step.predicted])))  # fmt: skip
    n = step.t + 1
    matrix = np.zeros((n, n))
    for i in range(n):
        matrix[i, : i + 1] = decoding.steps[i].self_row[layer, head]
    produced = [target_token(loaded, i) for i in decoding.ids[1 : n + 1]]
    gold = reference_alignment(task.name, tokens, produced)[-1] if produced and task is not None else None
    left, right = st.columns(2)
    show(where=left, fig=figs.look_ahead_heatmap(matrix, prefix, lang), key="tr_self")
    show(where=right, fig=figs.cross_row_bars(step.cross_row[layer, head], tokens, gold, lang),
                       key="tr_cross_row")  # fmt: skip
    shown = [readable(w) for w in target.itos]  # ␣ for a SentencePiece word start
    show(where=right, fig=figs.top_k_bars(step.probs, shown, step.chosen, TOP_K, lang), key="tr_topk")
    st.caption(t("translate.step_figures_caption", layer=layer + 1, head=head + 1))


lang = current_lang()
st.title(t("translate.title"))
st.caption(t("translate.intro"))
selection = current_selection()
name = choose_model(selection.model_key)
task = get_task(TRANSLATION_MODELS[name]) if has_task(name) else None
loaded = load_translation(name, selection.device)
if task is None:
    st.caption(t("translate.imported_about", layers=loaded.config.num_layers,
                 decoder_layers=loaded.config.num_decoder_layers, heads=loaded.config.num_heads))  # fmt: skip
text, gold = choose_text(task)
if not text:
    st.info(t("translate.no_words"))
    st.stop()
# the heatmap starts right under the input (on a laptop's first screen); what it reads and writes beside it
figure_column, side_column = st.columns([3, 2])
tokens, ids, unknown = tokens_or_stop(name, selection.device, text, side_column)
gold_pair = next((p for p in gold.values() if p.source == tuple(tokens)), None)
decoding = run_decoding(name, selection.device, tuple(ids), DecodeOptions())
produced = translation_block(task, loaded, decoding, gold_pair, side_column)
language_note(loaded, text, side_column)
if task is not None:
    trust_block(task, tokens, unknown, produced, side_column)
layer, head = cross_section(
    name, selection.device, ids, tokens, decoding, produced, task, lang, figure_column, side_column
)
step_section(name, selection.device, ids, tokens, task, gold_pair, layer, head, lang, text)
