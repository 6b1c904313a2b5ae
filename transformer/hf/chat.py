"""A conversation through a model's own chat template (a GGUF file's ``tokenizer.chat_template``), as
transformers' ``apply_chat_template`` renders it: Jinja with ``trim_blocks`` and ``lstrip_blocks``, the
messages, ``add_generation_prompt``, the start and end tokens by name, ``raise_exception``.

The template comes from the file, so it is untrusted. It is rendered

- outside the server's interpreter, in the isolated reader process the uploads use
  (:func:`~transformer.checkpoints.isolation.run_isolated`: a forked child with a wall-time limit of
  :data:`TIME_LIMIT_S` and an address-space limit of :data:`MEMORY_LIMIT_MB`), so a template that loops
  for ever or allocates gigabytes is stopped and said to be (where ``fork`` is missing, not on Linux, it runs
  in the caller: the sandbox's bounds below still hold, the time and memory limits do not);
- in a sandbox that bounds the work it can ask for (:mod:`.chat_sandbox`): Jinja's immutable sandbox (no
  attribute of Python objects beyond plain data, no changing the messages), ``**``, ``*`` and ``+`` checked
  before they compute (no 10**(10**8), no 'a' * 4,000,000,000), a budget of range items over the whole
  render, the text it writes cut off at :data:`MAX_PROMPT_CHARS`.

Every failure is a :class:`ChatTemplateError` whose ``code`` the page translates (``chat_time``,
``chat_memory``, ``chat_refused``...) and whose English message the CLI prints.

    text = render_chat(loaded.chat_template, [{"role": "user", "content": "What is the capital of Korea?"}])
    ids = chat_ids(loaded, messages)      # the ids to feed the model (nothing added: the template writes them)
"""

from __future__ import annotations

from collections.abc import Sequence

from ..checkpoints.errors import CodedError, LimitError
from ..checkpoints.isolation import run_isolated
from .chat_sandbox import MAX_PROMPT_CHARS, ChatTemplateError, render_plain

MAX_TEMPLATE_CHARS = 100_000
TIME_LIMIT_S = 5.0  # a real template renders in milliseconds
MEMORY_LIMIT_MB = 256
ROLES = ("system", "user", "assistant")
LIMITS = {  # LimitError.limit -> (code, English message)
    "time": (
        "chat_time",
        f"The chat template took longer than {TIME_LIMIT_S:g} s to write the prompt, so it was stopped.",
    ),
    "memory": ("chat_memory", f"The chat template needed more than {MEMORY_LIMIT_MB} MB of memory, so it was stopped."),
    "busy": ("chat_busy", "The chat template has to wait: the server is busy reading uploads. Try again in a minute."),
}
__all__ = ["MAX_PROMPT_CHARS", "ChatTemplateError", "chat_ids", "chat_text", "chat_texts", "render_chat"]


def render_chat(
    template: str,
    messages: Sequence[dict[str, str]],
    add_generation_prompt: bool = True,
    bos_token: str = "",
    eos_token: str = "",
) -> str:
    """``messages`` ([{"role": "user", "content": "..."}]) written out by ``template``; with
    ``add_generation_prompt`` the text ends where the assistant's answer begins. ChatTemplateError
    when there is no template, it is too long, a message is malformed, or the template fails or
    asks for too much (time, memory, work)."""
    return render_chats(template, [messages], add_generation_prompt, bos_token, eos_token)[0]


def render_chats(
    template: str,
    conversations: Sequence[Sequence[dict[str, str]]],
    add_generation_prompt: bool = True,
    bos_token: str = "",
    eos_token: str = "",
) -> list[str]:
    """:func:`render_chat` of several conversations in one isolated child (one fork, one compile)."""
    if not template:
        raise ChatTemplateError("chat_none", "This model has no chat template: use plain continuation.")
    if len(template) > MAX_TEMPLATE_CHARS:
        size, limit = f"{len(template):,}", f"{MAX_TEMPLATE_CHARS:,}"
        message = f"The chat template is {size} characters long (limit {limit})."
        raise ChatTemplateError("chat_template_long", message, size=size, limit=limit)
    plain = [[_message(m) for m in messages] for messages in conversations]
    args = (template, plain, bool(add_generation_prompt), str(bos_token), str(eos_token))
    try:
        texts = run_isolated(
            render_plain,
            *args,
            time_limit_s=TIME_LIMIT_S,
            memory_limit_mb=MEMORY_LIMIT_MB,
            what="Writing the prompt with the chat template",
        )
    except LimitError as err:
        code, message = LIMITS.get(err.limit, LIMITS["memory"])
        raise ChatTemplateError(code, message, seconds=f"{TIME_LIMIT_S:g}", mb=MEMORY_LIMIT_MB) from None
    except ChatTemplateError:
        raise
    except CodedError as err:  # a ChatTemplateError raised in the child comes back as a CodedError
        raise ChatTemplateError(err.code, str(err), **err.values) from None
    except ValueError as err:  # the child failed in a way the sandbox did not name
        message = f"The chat template failed ({str(err)[:200]})."
        raise ChatTemplateError("chat_broken", message, kind="Error", reason=str(err)[:200]) from None
    return [str(text) for text in texts]


def _message(message: dict) -> dict[str, str]:
    if not isinstance(message, dict) or message.get("role") not in ROLES or not isinstance(message.get("content"), str):
        raise ChatTemplateError(
            "chat_message",
            f"A message is a {{'role': one of {', '.join(ROLES)}, 'content': text}}, not {message!r:.80}.",
        )
    return {"role": message["role"], "content": message["content"]}


def chat_texts(
    loaded, conversations: Sequence[Sequence[dict[str, str]]], add_generation_prompt: bool = True
) -> list[str]:
    """:func:`render_chats` with ``loaded``'s template (``loaded.chat_template``) and its special tokens."""
    specials = loaded.gguf_tokenizer.specials if getattr(loaded, "gguf_tokenizer", None) is not None else {}
    template = getattr(loaded, "chat_template", "")
    bos, eos = specials.get("bos_token", ""), specials.get("eos_token", "")
    return render_chats(template, conversations, add_generation_prompt, bos, eos)


def chat_text(loaded, messages: Sequence[dict[str, str]], add_generation_prompt: bool = True) -> str:
    """:func:`render_chat` with ``loaded``'s template (``loaded.chat_template``) and its special tokens."""
    return chat_texts(loaded, [messages], add_generation_prompt)[0]


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
