""" "Ask the class": the one call a page makes to turn what it shows into a question.

Drawn only for a teacher (a browser session that started a class on the Class page); for everyone else
each function returns at once and the page is unchanged. The model's answer is computed when the
teacher clicks, from the same model and text the page shows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import streamlit as st

from .. import session
from ..i18n import class_name_in, current_lang, t, translate
from ..markdown import md_escape, readable_token
from .questions import (
    ROLE_NAMES,
    Draft,
    attend_question,
    correct_question,
    focused_query,
    head_role_question,
    label_question,
    next_token_model,
    next_token_question,
    next_word_question,
    question_text,
)
from .store import ClassError
from .view import PAGE, class_store, error_text

ROLES = ("previous", "induction", "next", "diagonal", "sink", "punctuation", "alignment", "locality")  # offered first
ASKED = session.value("_class_asked")  # {"page", "number"} the question this session asked last


def _teaching() -> tuple[str, str, str] | None:
    """(code, secret, screen) of the class this browser teaches, None for everyone else."""
    teacher = session.CLASS_TEACHER.get()
    return (teacher["code"], teacher["secret"], teacher["screen"]) if teacher else None


def _box(page: str, body: Callable[[], Callable[[], Draft] | None]) -> None:
    """The popover: ``body`` draws the question's own choices and returns how to build the draft (or
    None when the page has nothing to ask about); then the Ask button (a callback: it runs before the
    next run, so no rerun of the page can lose the click)."""
    teaching = _teaching()
    if teaching is None:
        return
    with st.popover(t("class.ask_button"), icon=":material/quiz:"):
        build = body()
        if build is None:
            return
        st.button(t("class.ask"), type="primary", key=f"class_ask_go_{page}", icon=":material/send:",
                  on_click=_ask, args=(page, teaching, build))  # fmt: skip
        asked = ASKED.get()
        if asked and asked["page"] == page:
            if "error" in asked:
                st.error(asked["error"])
                return
            st.success(t("class.asked", n=asked["number"]))
            st.page_link(PAGE, label=t("class.open_class"), icon=":material/groups:")


def _ask(page: str, teaching: tuple[str, str, str], build: Callable[[], Draft]) -> None:
    """The Ask button's callback: the model answers, the store keeps the question (answer hidden); refused
    when another teacher screen leads the class."""
    code, secret, screen = teaching
    try:
        draft = build()
        number = class_store().ask(code, secret, draft.kind, draft.payload, draft.options, draft.answer, draft.reveal,
                                   screen=screen)  # fmt: skip
    except ClassError as err:
        ASKED.set({"page": page, "error": error_text(err)})
        return
    except ValueError as err:
        ASKED.set({"page": page, "error": t("class.cannot_ask", error=md_escape(str(err)))})
        return
    ASKED.set({"page": page, "number": number})


def ask_attention(queries: list[str], keys: list[str], weights: np.ndarray, layer: int, head: int, model: str,
                  text: str) -> None:  # fmt: skip
    """Attention page: which token does a chosen token attend to most in this layer and head?"""

    def body():
        default = focused_query(weights, layer, head) if queries == keys else len(queries) - 1
        query = st.selectbox(t("class.ask_query"), list(range(len(queries))), index=default, key="class_ask_query",
                             format_func=lambda i: f"{i}: {readable_token(queries[i])}")  # fmt: skip
        preview = {"kind": "attend", "query_token": queries[query], "query": query, "layer": layer + 1,
                   "head": head + 1}  # fmt: skip
        st.markdown(question_text(preview, current_lang()))
        return lambda: attend_question(queries, keys, weights, layer, head, query, model, text)

    _box("attention", body)


def ask_next_token(name: str, device: str, ids: list[int]) -> None:
    """Generate page: what will the language model write next after the prompt?"""

    def body():
        from ..language_models import continuation, next_distribution, prompt_of, token_text

        st.markdown(question_text({"kind": "next_token"}, current_lang()))
        model, prompt = next_token_model(name, current_lang()), list(ids)
        if model != name:  # another model answers in this class's language: the same text in its own tokens
            prompt = prompt_of(model, device, continuation(name, device, prompt)).ids
        return lambda: next_token_question(
            next_distribution(model, device, tuple(prompt)),
            lambda i: token_text(model, device, i),
            model,
            continuation(model, device, prompt),
        )

    _box("generate", body)


def ask_next_word(model: str, source: str, written: str, probs: np.ndarray, token_text: Callable[[int], str]) -> None:
    """Translate page: the translation so far is ``written``; which word will the translator write next?
    ``probs`` (V,) the decoder's next-token probabilities at the step on screen (the page's own decoding)."""

    def body():
        st.markdown(question_text({"kind": "next_word", "written": written}, current_lang()))
        return lambda: next_word_question(probs, token_text, model, source, written)

    _box("translate", body)


def ask_classifier(selection, text: str) -> None:
    """Classifier page: what will it say about the sentence, or: will it get the sentence right?"""

    def body():
        from ..models import get_model, run_analysis

        labels = list(get_model(selection).config.label_names)
        kinds = {"label": t("class.kind_label"), "correct": t("class.kind_correct")}
        kind = st.radio(t("class.ask_kind"), list(kinds), format_func=kinds.get, key="class_ask_kind")
        truth = None
        if kind == "correct":
            lang = current_lang()  # the format function runs outside the run too (AppTest): it keeps the run's language
            truth = st.selectbox(t("class.ask_truth"), list(range(len(labels))), key="class_ask_truth",
                                 format_func=lambda i: class_name_in(labels[i], lang))  # fmt: skip
            st.markdown(question_text({"kind": "correct", "truth": labels[truth]}, current_lang()))
        else:
            st.markdown(question_text({"kind": "label"}, current_lang()))

        def build() -> Draft:
            probs = run_analysis(selection, [text]).probabilities[0]
            if kind == "correct":
                return correct_question(labels, probs, truth, selection.model_key, text)
            return label_question(labels, probs, selection.model_key, text)

        return build

    _box("classifier", body)


def ask_head_role(part, model: str, text: str) -> None:
    """Head atlas: which head is the previous-token (induction, …) head? ``part`` an AtlasPart."""

    def body():
        roles = [r for r in ROLES if r in part.scores]
        if not roles:
            return None
        lang = current_lang()
        role = st.selectbox(t("class.ask_role"), roles, key="class_ask_role",
                            format_func=lambda r: translate(ROLE_NAMES[r], lang))  # fmt: skip
        st.markdown(question_text({"kind": "head_role", "role": role}, current_lang()))
        return lambda: head_role_question(part.scores[role], role, model, text)

    _box("head_atlas", body)
