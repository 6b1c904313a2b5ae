"""The Checkpoints page opens GGUF files (AppTest): an uploaded .gguf goes through the isolated reader,
the page says what was read and how each tensor was stored, and the model is used in this session; a
damaged file gets one message, in English and in Korean."""

from __future__ import annotations

import pytest
from gguf import GGMLQuantizationType

from tests.app_helpers import open_app
from tests.gguf_files import Case, write_case
from ui import session


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    write_case(Case("qwen2", "gpt2", GGMLQuantizationType.Q4_1, pre="qwen2"), path)
    return path.read_bytes()


def upload(data: bytes, lang: str = "en"):
    at = open_app("checkpoints", **({"lang": lang} if lang != "en" else {}))
    at.file_uploader(key="ckpt_file").set_value(("tiny.gguf", data, "application/octet-stream"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def shown(elements) -> list[str]:
    return [e.value.replace("\\", "") for e in elements]


def test_an_uploaded_gguf_says_what_was_read_and_is_used(tiny):
    at = upload(tiny)
    assert not at.error, shown(at.error)
    assert any("Qwen2" in h.value for h in at.subheader)
    files = at.dataframe[0].value
    assert dict(zip(files["File"], files["Read as"]))["tiny.gguf"].startswith("everything: settings, weights")
    types = [c for c in shown(at.caption) if c.startswith("Tensor types in the file")]
    assert types and "16 Q4_1 (" in types[0] and "11 F32 (" in types[0], shown(at.caption)
    at.button(key="ckpt_use").click().run()
    assert not at.exception, [e.value for e in at.exception]
    uploads = at.session_state[session.UPLOADS_KEY]
    assert any(getattr(m, "format", "") == "gguf" for m in uploads.values())


@pytest.mark.parametrize("lang, words", [("en", "cut off"), ("ko", "잘렸습니다")])
def test_a_cut_gguf_gets_one_message_in_the_readers_language(tiny, lang, words):
    at = upload(tiny[: len(tiny) // 2], lang)
    errors = shown(at.error)
    assert len(errors) == 1 and "tiny.gguf" in errors[0] and words in errors[0], errors
