"""Questions asked of the model, answered first by the class: built from what the page has just computed
(the live model on the current text), never written by hand. The model's own answer and the numbers
behind it go in ``reveal`` (hidden by the store until the teacher reveals).

Pure functions of numpy arrays and token lists; every text a screen shows is made from the payload in
the reader's own language (:func:`question_text`, :func:`option_text`).

Kinds:
* ``attend`` — which token does token q attend to most in layer l, head h? (students click a token)
* ``next_token`` — what will the language model write next? (four of its likeliest tokens, shuffled)
* ``next_word`` — the translation so far is …: which word will the translator write next? (the same four)
* ``label`` — what will the classifier say about this sentence?
* ``correct`` — the sentence really is X: will the classifier get it right? (yes / no)
* ``head_role`` — which head is the previous-token (or induction) head? (students click a head)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from ..i18n import class_name_in, translate
from ..markdown import md_escape, readable_token

KINDS = ("attend", "next_token", "next_word", "label", "correct", "head_role")
ROLE_NAMES = {role: f"atlas.role_{role}" for role in ("previous", "next", "diagonal", "sink", "punctuation",
              "induction", "alignment", "locality")}  # fmt: skip
PLAIN_QUESTIONS = {"next_token": "class.q_next_token", "label": "class.q_label"}  # the kinds without fields
NEXT_CHOICES = 4
TEXT_SHOWN = 300  # characters of the sentence kept in a question (the question names it; the page has it all)
MAX_TOKENS = 64  # an attention question offers at most this many tokens (the attention page's window)


# Which model answers a "which token next?" question, per language of the class: a language not listed asks the
# model the Generate page shows. The one place to make another model (Gemma for Korean, say) the class's model in
# a language; ui.classroom.ask.ask_next_token reads it through next_token_model.
NEXT_TOKEN_MODELS: dict[str, str] = {}


def next_token_model(page_model: str, lang: str) -> str:
    """The model key that answers a next-token question asked in ``lang`` from a page showing ``page_model``."""
    return NEXT_TOKEN_MODELS.get(lang, page_model)


@dataclass(frozen=True)
class Draft:
    """A question ready to ask: ``payload`` every screen shows, ``options`` how many choices, ``answer``
    the model's choice (an index), ``reveal`` the model's numbers (hidden until the reveal)."""

    kind: str
    payload: dict
    answer: int
    reveal: dict

    @property
    def options(self) -> int:
        return len(self.payload["options"])


def _values(array) -> list[float]:
    return [round(float(v), 4) for v in np.asarray(array, dtype=np.float64).ravel()]


def _base(kind: str, model: str, text: str, options: list[str], option_kind: str, **fields) -> dict:
    return {"kind": kind, "model": model, "text": text[:TEXT_SHOWN], "options": options,
            "option_kind": option_kind, **fields}  # fmt: skip


def focused_query(weights: np.ndarray, layer: int, head: int) -> int:
    """The query token whose row in (``layer``, ``head``) of ``weights`` (L, H, T, T) is the most peaked
    (largest top weight), the first token left out when another exists (a causal first row is all 1).
    A good default for an attention question: that head clearly picks one token there."""
    rows = np.asarray(weights[layer, head], dtype=np.float64)
    tops = np.nan_to_num(rows.max(axis=-1), nan=-1.0)
    if len(tops) > 1:
        tops[0] = -1.0
    return int(np.argmax(tops))


def attend_question(
    queries: list[str],
    keys: list[str],
    weights: np.ndarray,
    layer: int,
    head: int,
    query: int,
    model: str,
    text: str,
) -> Draft:
    """Which of ``keys`` does ``queries[query]`` attend to most in ``layer``, ``head`` (0-based) of
    ``weights`` (L, H, T_q, T_k)? The answer is the row's argmax (over the first MAX_TOKENS keys)."""
    weights = np.asarray(weights)
    if weights.ndim != 4 or weights.shape[-2:] != (len(queries), len(keys)):
        raise ValueError(f"weights must be (L, H, {len(queries)}, {len(keys)}); got {weights.shape}")
    if not (0 <= layer < weights.shape[0] and 0 <= head < weights.shape[1] and 0 <= query < weights.shape[2]):
        raise ValueError(f"layer {layer}, head {head}, query {query} outside weights of shape {weights.shape}")
    keys = list(keys)[:MAX_TOKENS]
    row = np.nan_to_num(np.asarray(weights[layer, head, query, : len(keys)], dtype=np.float64))
    payload = _base("attend", model, text, keys, "token", layer=layer + 1, head=head + 1, query=query,
                    query_token=queries[query])  # fmt: skip
    return Draft("attend", payload, int(np.argmax(row)), {"values": _values(row)})


def _shuffled(ids: list[int], seed_text: str) -> list[int]:
    seed = int.from_bytes(hashlib.sha256(seed_text.encode()).digest()[:4], "little")
    order = np.random.default_rng(seed).permutation(len(ids))
    return [ids[i] for i in order]


def next_token_question(probs: np.ndarray, token_text, model: str, text: str, choices: int = NEXT_CHOICES) -> Draft:
    """What will the language model write next? ``probs`` (V,) next-token probabilities after the
    prompt ``text``; ``token_text(id)`` shows a token. The options are the ``choices`` likeliest tokens
    in an order drawn from the prompt (so the first is not always right); the answer is the likeliest."""
    return _likeliest("next_token", probs, token_text, model, text, text, choices)


def next_word_question(
    probs: np.ndarray, token_text, model: str, source: str, written: str, choices: int = NEXT_CHOICES
) -> Draft:
    """Which word will the translator write next? ``probs`` (V,) the decoder's next-token probabilities
    after ``written`` (the translation so far, plain text) of ``source``; options and answer as
    :func:`next_token_question`."""
    return _likeliest("next_word", probs, token_text, model, source, source + "\x00" + written, choices,
                      written=written[:TEXT_SHOWN])  # fmt: skip


def _likeliest(kind: str, probs, token_text, model: str, text: str, seed_text: str, choices: int, **fields) -> Draft:
    probs = np.asarray(probs, dtype=np.float64)
    top = [int(i) for i in np.argsort(-probs, kind="stable")[:choices]]
    ids = _shuffled(top, seed_text)
    options = [token_text(i) for i in ids]
    if len(set(options)) < len(options):  # two ids shown alike: number them apart
        options = [f"{o} ({i})" for o, i in zip(options, ids)]
    payload = _base(kind, model, text, options, "token", **fields)
    return Draft(kind, payload, ids.index(top[0]), {"values": _values(probs[ids])})


def label_question(labels: list[str], probs: np.ndarray, model: str, text: str) -> Draft:
    """What will the classifier say about ``text``? ``probs`` (C,) its probabilities over ``labels``."""
    probs = np.asarray(probs, dtype=np.float64)
    if probs.shape != (len(labels),):
        raise ValueError(f"{len(labels)} labels but probabilities of shape {probs.shape}")
    payload = _base("label", model, text, list(labels), "label")
    return Draft("label", payload, int(np.argmax(probs)), {"values": _values(probs)})


def correct_question(labels: list[str], probs: np.ndarray, truth: int, model: str, text: str) -> Draft:
    """``text`` really is ``labels[truth]``: will the classifier get it right? Options yes / no; the answer
    is whether its likeliest label is the true one; the reveal holds its probabilities."""
    probs = np.asarray(probs, dtype=np.float64)
    if probs.shape != (len(labels),) or not 0 <= truth < len(labels):
        raise ValueError(f"{len(labels)} labels, probabilities {probs.shape}, true label {truth}")
    predicted = int(np.argmax(probs))
    payload = _base("correct", model, text, ["yes", "no"], "yesno", truth=labels[truth])
    reveal = {"labels": list(labels), "values": _values(probs), "predicted": labels[predicted]}
    return Draft("correct", payload, 0 if predicted == truth else 1, reveal)


def head_role_question(scores: np.ndarray, role: str, model: str, text: str) -> Draft:
    """Which head is the ``role`` head ("previous", "induction", …)? ``scores`` (L, H) that role's score
    per head; the answer is the highest-scoring head; options are every head, layer by layer."""
    scores = np.nan_to_num(np.asarray(scores, dtype=np.float64))
    if scores.ndim != 2:
        raise ValueError(f"scores must be (layers, heads); got {scores.shape}")
    layers, heads = scores.shape
    options = [f"{la + 1}.{h + 1}" for la in range(layers) for h in range(heads)]
    payload = _base("head_role", model, text, options, "head", role=role, layers=layers, heads=heads)
    return Draft("head_role", payload, int(np.argmax(scores.ravel())), {"values": _values(scores)})


# ---- text in the reader's language ------------------------------------------------------------------------------
def option_text(payload: dict, index: int, lang: str) -> str:
    """Option ``index`` as a reader sees it (plain text: escape it for Markdown)."""
    option = payload["options"][index]
    kind = payload.get("option_kind")
    if kind == "yesno":
        return translate("class.option_yes" if option == "yes" else "class.option_no", lang)
    if kind == "label":
        return class_name_in(option, lang)
    if kind == "head":
        layer, head = option.split(".")
        return translate("class.option_head", lang, layer=layer, head=head)
    if kind == "token" and payload["kind"] == "attend":
        return f"{index}: {readable_token(option)}"
    return readable_token(option)


def question_text(payload: dict, lang: str, plain: bool = False) -> str:
    """The question in ``lang``, as Markdown with every token and label in it escaped; ``plain`` gives
    plain text instead (a table, a CSV file): nothing escaped, no bold marks."""
    if plain:  # the catalogue's bold marks go, a token's own stars stay
        text = _question_text(payload, lang, lambda value: value.replace("*", "\x01"))
        return text.replace("**", "").replace("\x01", "*")
    return _question_text(payload, lang, md_escape)


def _question_text(payload: dict, lang: str, escape) -> str:
    kind = payload["kind"]
    if kind == "attend":
        token = escape(readable_token(payload["query_token"]))
        return translate("class.q_attend", lang, token=token, index=payload["query"], layer=payload["layer"],
                         head=payload["head"])  # fmt: skip
    if kind == "correct":
        return translate("class.q_correct", lang, truth=escape(class_name_in(payload["truth"], lang)))
    if kind == "head_role":
        role = translate(ROLE_NAMES[payload["role"]], lang)
        return translate("class.q_head_role", lang, role=escape(role))
    if kind == "next_word":
        return translate("class.q_next_word", lang, written=escape(payload.get("written") or "…"))
    return translate(PLAIN_QUESTIONS[kind], lang)


def export_rows(questions, tallies: dict[int, object], lang: str) -> list[dict]:
    """The class's questions for a CSV file: one row per option of each question (number, kind, the
    question, the sentence, the option, whether it is the model's answer, the model's number, how many
    students chose it, and the nicknames given among them). A question not yet revealed keeps the model's
    answer and numbers out (empty cells): a file exported mid-question may end up on the projector."""
    rows = []
    for question in questions:
        payload, tally = question.payload, tallies[question.number]
        shown = question.revealed and question.answer is not None
        values = (question.reveal or {}).get("values", []) if shown else []
        for i in range(question.options):
            rows.append({
                "question": question.number,
                "kind": question.kind,
                "asked": question_text(payload, lang, plain=True),
                "text": payload.get("text", ""),
                "model": payload.get("model", ""),
                "option": option_text(payload, i, lang),
                "model_answer": (i == question.answer) if shown else "",
                "model_value": values[i] if i < len(values) and question.kind != "correct" else "",
                "count": tally.counts[i],
                "nicknames": "; ".join(tally.nicknames[i]),
            })  # fmt: skip
    return rows
