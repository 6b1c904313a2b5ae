"""The Generate page's widgets for a chat: the question box, the answer streamed token by token, and
where each answer token's attention went in the question (the computation is ``ui.chat``'s); and the
page's shared checks (a model that cannot be opened, a text cut at the box's limit with a message, a note
on its language)."""

from __future__ import annotations

import streamlit as st

from transformer.analysis.language_check import check_text, model_languages

from . import chat, session
from .charts import show
from .continuation import chat_html
from .echo import cut_to_limit
from .figure_cache import shared_figures
from .figures import generate as generate_figures
from .i18n import t
from .language import message as language_message
from .language_models import CHAT_EXAMPLE, load_lm, token_text
from .markdown import md_escape
from .readable_tokens import tokens_shown

figs = shared_figures(generate_figures)
CHAT = session.value("gen_chat_answer")  # this session's last answer: (its inputs, prompt, tokens, stopped)
QUESTION_KEY = "gen_question"
CHAT_ERRORS = {  # ChatTemplateError codes (transformer.hf.chat) -> catalogue keys
    "chat_none": "generate.chat_error_none",
    "chat_template_long": "generate.chat_error_template_long",
    "chat_message": "generate.chat_error_message",
    "chat_refused": "generate.chat_error_refused",
    "chat_broken": "generate.chat_error_broken",
    "chat_range": "generate.chat_error_range",
    "chat_number": "generate.chat_error_number",
    "chat_size": "generate.chat_error_size",
    "chat_output": "generate.chat_error_output",
    "chat_recursion": "generate.chat_error_recursion",
    "chat_time": "generate.chat_error_time",
    "chat_memory": "generate.chat_error_memory",
    "chat_busy": "generate.chat_error_busy",
}


def cut_text(text: str, limit: int) -> str:
    """A box's text, cut at ``limit`` with the message a link's text gets (never dropped in silence)."""
    text, message = cut_to_limit(text, limit)
    if message:
        st.warning(message)
    return text


def language_note(name: str, device: str, text: str) -> None:
    """Say so when most of the prompt is in a script the model was not trained on (numbers, emoji
    and an empty prompt are continued as any text is)."""
    found = check_text(text, model_languages(load_lm(name, device).metrics))
    if found.code == "other_script":
        st.warning(language_message(found))


def question_box(name: str, device: str, limit: int) -> str:
    """The chat's question (cut at ``limit`` with a message); stops the page when it is empty."""
    question = session.value(QUESTION_KEY)
    if not question.is_set:
        question.set(CHAT_EXAMPLE)
    text = cut_text(st.text_area(t("generate.question"), key=QUESTION_KEY, height=80, bind="query-params"), limit)
    if not text.strip():
        st.info(t("generate.chat_empty"))
        st.stop()
    language_note(name, device, text)
    return text


def chat_answer(name, device, question, settings, steps, where):
    """This session's answer to ``question`` (the last one is kept: a rerun redraws it), streamed into
    ``where`` token by token while it is written. Returns (prompt, answer tokens, stop reason)."""
    inputs = (name, device, question, settings, steps)
    kept = CHAT.get()
    if kept is not None and kept[0] == inputs:
        return kept[1:]
    loaded = load_lm(name, device)
    try:
        prompt = chat.chat_prompt(loaded, question)
    except ValueError as err:
        st.error(chat_problem(err))
        st.stop()
    if len(prompt.ids) >= loaded.config.max_len:
        st.error(
            t(
                "generate.too_long",
                n=len(prompt.ids),
                most=loaded.config.max_len - 1,
                cut=len(prompt.ids) - loaded.config.max_len + 1,
            )
        )
        st.stop()
    box, answer = where.empty(), []
    stop = chat.end_ids(loaded)
    for token in chat.answer_tokens(loaded.model, prompt, settings, steps, stop):
        answer.append(token)
        written = loaded.lm_tokenizer.decode([a.token_id for a in answer], skip_special_tokens=True)
        box.html(chat_html(question, written, t("generate.chat_you"), t("generate.chat_model")))
    box.empty()
    stopped = "end" if answer and answer[-1].token_id in stop else "steps"
    CHAT.set((inputs, prompt, answer, stopped))
    return prompt, answer, stopped


def model_or_stop(name: str, device: str):
    """The model ``name`` as the page uses it; a model that cannot be opened (a server folder's GGUF file the
    reader refuses) is one message in the reader's language, and the page stops there."""
    from .checkpoint_text import problem_of, problem_text
    from .i18n import current_lang

    try:
        return load_lm(name, device)
    except ValueError as err:
        st.error(md_escape(problem_text(problem_of(err), current_lang())))
        st.stop()


def chat_problem(err: ValueError) -> str:
    """Why the chat template could not write the prompt, in the reader's language (by the error's code; the
    values from the file, already escaped and cut, shown literally)."""
    key = CHAT_ERRORS.get(getattr(err, "code", ""))
    if key is None:
        return t("generate.chat_failed", reason=md_escape(str(err)))
    return t(key, **{name: md_escape(str(value)) for name, value in getattr(err, "values", {}).items()})


def chat_view(name, device, question, settings, steps, lang, where) -> None:
    """The conversation (the answer streamed), then where each answer token's attention went in the question."""
    loaded = load_lm(name, device)
    with where:
        prompt, answer, stopped = chat_answer(name, device, question, settings, steps, st.container())
        written = loaded.lm_tokenizer.decode([a.token_id for a in answer], skip_special_tokens=True)
        st.html(chat_html(question, written, t("generate.chat_you"), t("generate.chat_model")))
        key = "generate.chat_stopped_end" if stopped == "end" else "generate.chat_stopped_steps"
        st.caption(t(key, n=len(answer)))
        figure = st.container()
        first, last = st.select_slider(t("generate.chat_layers"), list(range(1, loaded.config.num_layers + 1)),
                                       value=(1, loaded.config.num_layers), key="gen_chat_layers")  # fmt: skip
        rows, share = chat.question_attention(answer, (first, last))
        start, end = prompt.question
        labels = tokens_shown(loaded, list(prompt.ids))[start:end]
        shown = [token_text(name, device, a.token_id) for a in answer]
        title = t("generate.fig_answer_title", first=first, last=last)
        with figure:
            show(fig=figs.answer_attention(rows, share, shown, labels, title, lang), key="gen_answer")
        st.caption(t("generate.chat_caption"))
    with st.expander(t("generate.chat_prompt_title")):
        st.caption(t("generate.chat_prompt_caption", n=len(prompt.ids)))
        st.code(prompt.text, language=None)
