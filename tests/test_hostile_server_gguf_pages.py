"""A GGUF file the server names ($ATTENTION_LAB_MODELS) that the reader refuses, chosen in the sidebar of the
Attention page (which offers the language models): one message naming the file and why, in the reader's
language, and no exception box (Generate's own model choice is tested in test_gguf_corpus.py)."""

from __future__ import annotations

import pytest

from tests.gguf_corpus import corpus

from .app_helpers import open_app

WHY = {"en": "not a multiple of the file's alignment", "ko": "정렬"}


@pytest.fixture(scope="module")
def misaligned(tmp_path_factory):
    return next(case for case in corpus(tmp_path_factory.mktemp("corpus")) if case.id == "misaligned")


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_servers_gguf_the_reader_refuses_is_one_message_in_the_readers_language(
    tmp_path, monkeypatch, misaligned, lang
):
    from ui import models

    folder = tmp_path / "hostile-model"
    folder.mkdir()
    (folder / "model.gguf").write_bytes(misaligned.data)
    monkeypatch.setenv(models.SERVER_MODELS_ENV, str(folder))
    at = open_app("attention", **({"lang": lang} if lang != "en" else {}))
    at.sidebar.selectbox[0].set_value("server: hostile-model").run()
    assert not at.exception, [str(e.value)[:300] for e in at.exception]
    errors = [e.value.replace("\\", "") for e in at.error]
    assert len(errors) == 1 and "model.gguf" in errors[0] and WHY[lang] in errors[0], errors
