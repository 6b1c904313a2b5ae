"""A conversation through a model's own chat template (a GGUF file's ``tokenizer.chat_template``), as
transformers' ``apply_chat_template`` renders it: Jinja with ``trim_blocks`` and ``lstrip_blocks``, the
messages, ``add_generation_prompt``, the start and end tokens by name, ``raise_exception``.

The template comes from the file, so it is untrusted: it runs in Jinja's immutable sandbox (no
attribute of Python objects beyond plain data, no changing the messages), ranges are capped by the
sandbox, and the text it writes is cut off at :data:`MAX_PROMPT_CHARS`.

    text = render_chat(loaded.chat_template, [{"role": "user", "content": "What is the capital of Korea?"}])
    ids = chat_ids(loaded, messages)      # the ids to feed the model (nothing added: the template writes them)
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

MAX_PROMPT_CHARS = 200_000
MAX_TEMPLATE_CHARS = 100_000
ROLES = ("system", "user", "assistant")


class ChatTemplateError(ValueError):
    """The model has no chat template, or its template fails on the conversation; the message says which."""


def _raise(message: str):
    raise ChatTemplateError(f"The chat template refused the conversation: {message}")


def _environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, autoescape=False)
    env.filters["tojson"] = lambda value, indent=None: json.dumps(value, ensure_ascii=False, indent=indent)
    env.globals["raise_exception"] = _raise
    return env


def render_chat(
    template: str,
    messages: Sequence[dict[str, str]],
    add_generation_prompt: bool = True,
    bos_token: str = "",
    eos_token: str = "",
) -> str:
    """``messages`` ([{"role": "user", "content": "..."}]) written out by ``template``; with
    ``add_generation_prompt`` the text ends where the assistant's answer begins. ChatTemplateError
    when there is no template, it is too long, a message is malformed, or the template fails."""
    if not template:
        raise ChatTemplateError("This model has no chat template: use plain continuation.")
    if len(template) > MAX_TEMPLATE_CHARS:
        raise ChatTemplateError(
            f"The chat template is {len(template):,} characters long (limit {MAX_TEMPLATE_CHARS:,})."
        )
    plain = [_message(m) for m in messages]
    try:
        compiled = _environment().from_string(template)
        pieces, size = [], 0
        for piece in compiled.generate(
            messages=plain, add_generation_prompt=add_generation_prompt, bos_token=bos_token, eos_token=eos_token
        ):
            size += len(piece)
            if size > MAX_PROMPT_CHARS:
                raise ChatTemplateError(f"The chat template wrote more than {MAX_PROMPT_CHARS:,} characters.")
            pieces.append(piece)
    except TemplateError as err:
        raise ChatTemplateError(
            f"The chat template failed on this conversation ({type(err).__name__}: {err})."
        ) from err
    return "".join(pieces)


def _message(message: dict) -> dict[str, str]:
    if not isinstance(message, dict) or message.get("role") not in ROLES or not isinstance(message.get("content"), str):
        raise ChatTemplateError(
            f"A message is a {{'role': one of {', '.join(ROLES)}, 'content': text}}, not {message!r:.80}."
        )
    return {"role": message["role"], "content": message["content"]}


def chat_text(loaded, messages: Sequence[dict[str, str]], add_generation_prompt: bool = True) -> str:
    """:func:`render_chat` with ``loaded``'s template (``loaded.chat_template``) and its special tokens."""
    specials = loaded.gguf_tokenizer.specials if getattr(loaded, "gguf_tokenizer", None) is not None else {}
    template = getattr(loaded, "chat_template", "")
    return render_chat(
        template, messages, add_generation_prompt, specials.get("bos_token", ""), specials.get("eos_token", "")
    )


def chat_ids(loaded, messages: Sequence[dict[str, str]], add_generation_prompt: bool = True) -> list[int]:
    """The ids of the rendered conversation, as ``apply_chat_template(tokenize=True)`` gives them: the
    template writes every special token itself, so the tokenizer adds none."""
    text = chat_text(loaded, messages, add_generation_prompt)
    return list(loaded.lm_tokenizer.encode(text, add_special_tokens=False).ids)


def end_of_turn_id(loaded) -> int | None:
    """The token that ends the model's turn: ``<|im_end|>`` / ``<|eot_id|>`` / ``<|end|>`` where the
    vocabulary has one, else the end token (``eos_id``). Generation in chat stops there."""
    for text in ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>"):
        index = loaded.lm_tokenizer.token_to_id(text)
        if index is not None and index < loaded.config.vocab_size:
            return index
    return loaded.config.eos_id
