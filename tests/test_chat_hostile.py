"""Hostile chat templates (issue 56): each is stopped with one clear message (its code, an English line
without control characters), rendered outside the server's interpreter (the isolated child: the
caller's memory does not grow), and on the Generate page the failure is one message in the reader's
language, never an exception box."""

from __future__ import annotations

import tracemalloc

import pytest
import torch
from gguf import GGMLQuantizationType

from tests.app_helpers import open_app
from tests.gguf_corpus import CHAT_TEMPLATES, ESCAPES
from tests.gguf_files import CHAT_TEMPLATE, Case, write_case
from transformer.hf.chat import ChatTemplateError, render_chat, render_chats
from transformer.loader import load_model
from ui.session import upload_key

MESSAGES = [{"role": "user", "content": "What is the capital of Korea?"}]
CALLER_PEAK = 4 * 1024**2  # what the caller allocates while a template asks for gigabytes in the child


@pytest.mark.parametrize("template, code", list(CHAT_TEMPLATES.items()), ids=list(CHAT_TEMPLATES.values()))
def test_each_hostile_template_is_one_clear_message(template, code):
    tracemalloc.start()
    try:
        with pytest.raises(ChatTemplateError) as caught:
            render_chat(template, MESSAGES)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(caught.value)
    assert caught.value.code == code, message
    assert message.startswith("The chat template") and len(message) < 300
    assert not any(ord(c) < 32 for c in message), repr(message)
    assert peak < CALLER_PEAK, peak


def test_the_refusal_a_template_raises_is_escaped():
    with pytest.raises(ChatTemplateError) as caught:
        render_chat("{{ raise_exception('" + ESCAPES + "') }}", MESSAGES)
    assert caught.value.values["reason"] == "\\x1b]0;pwned\\x07\\x1b[2J"


def test_a_good_template_renders_several_conversations_in_one_child():
    texts = render_chats(CHAT_TEMPLATE, [MESSAGES, [{"role": "user", "content": ""}]])
    assert texts == [
        "<|im_start|>user\nWhat is the capital of Korea?<|im_end|>\n<|im_start|>assistant\n",
        "<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n",
    ]


@pytest.fixture(scope="module")
def hostile_models(tmp_path_factory):
    """Tiny GGUF models whose chat template asks for a billion numbers, and for 2**40 characters."""
    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("chat")
    found = {}
    for name, template in (
        ("range", "{% for i in range(10**9) %}{% endfor %}"),
        ("memory", next(t for t, c in CHAT_TEMPLATES.items() if c == "chat_memory")),
    ):
        path = folder / f"{name}.gguf"
        write_case(Case("llama", "gpt2", GGMLQuantizationType.Q8_0, template=template), path)
        found[name] = load_model(path)
    return found


@pytest.mark.parametrize(
    "model, lang, words",
    [
        ("range", "en", "ranges of more than 100,000 numbers"),
        ("range", "ko", "100,000개가 넘는 수의 범위"),
        ("memory", "en", "more than 256 MB of memory"),
        ("memory", "ko", "256 MB 넘는 메모리"),
    ],
)
def test_the_generate_page_says_why_the_template_was_stopped(hostile_models, model, lang, words):
    key = upload_key(f"{model}.gguf")
    at = open_app(
        "generate",
        uploads={key: hostile_models[model]},
        chosen=key,
        state={"gen_view": "chat"},
        **({"lang": lang} if lang != "en" else {}),
    )
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value.replace("\\", "") for e in at.error]
    assert len(errors) == 1 and words in errors[0], errors
