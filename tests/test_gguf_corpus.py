"""The crafted GGUF corpus (issue 56, :mod:`tests.gguf_corpus`): each file gets its one clear message (or
loads), through ``load_model``, the CLI and the Checkpoints page, in English and Korean: the layout rules
llama.cpp enforces (alignment, offsets on it, no overlap, no gap), names and values from the file escaped
and cut, tokenizer build failures naming the merge, no ``config.json`` in a GGUF file's refusal, a count's
limit said, the merges rebuild bounded; and the header read in bounded memory."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from tests.app_helpers import open_app
from tests.gguf_corpus import CASE_IDS, LOADS, corpus, plain_merges
from transformer.checkpoints.errors import CodedError
from transformer.cli.main import main as cli_main
from transformer.hf.gguf_tokenizer import merges_from_scores
from transformer.loader import load_model

ROOT = Path(__file__).resolve().parent.parent
PEAK_BYTES = 24 * 1024**2  # reading any crafted file may allocate at most this (the 1 MB token is read once)
LONGEST_MESSAGE = 400


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> dict:
    found = {case.id: case for case in corpus(tmp_path_factory.mktemp("corpus"))}
    assert tuple(found) == CASE_IDS
    return found


def clean(message: str) -> None:
    """One line a terminal and a page show as it is: no control character, cut, no config.json."""
    assert not any(ord(c) < 32 or ord(c) == 127 for c in message), repr(message[:200])
    assert len(message) < LONGEST_MESSAGE, len(message)
    assert "config.json" not in message and "None" not in message and "Traceback" not in message


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_each_crafted_file_gets_its_message_in_bounded_memory(tmp_path, cases, case_id):
    case = cases[case_id]
    path = tmp_path / "hostile.gguf"
    path.write_bytes(case.data)
    tracemalloc.start()
    try:
        if case.code is None:
            assert load_model(path).format == "gguf"
            return
        with pytest.raises(CodedError) as caught:
            load_model(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(caught.value)
    assert caught.value.code == case.code, message
    assert message.startswith("hostile.gguf") and all(w in message for w in case.words), message
    clean(message)
    assert all(not any(ord(c) < 32 for c in str(v)) for v in caught.value.values.values())
    assert peak < PEAK_BYTES, peak


@pytest.mark.parametrize("case_id", [c for c in CASE_IDS if c not in LOADS])
def test_the_cli_prints_one_clean_error_line(tmp_path, cases, case_id, capsys):
    path = tmp_path / f"{case_id}.gguf"
    path.write_bytes(cases[case_id].data)
    status = cli_main(["inspect", "--checkpoint", str(path), "--text", "hi", "--attention", "none"])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {case_id}.gguf"), err[:300]
    clean(lines[0])


def test_terminal_escapes_never_reach_the_terminal(tmp_path, cases):
    """The real CLI, in its own process: stderr holds the escapes written out, not the bytes."""
    path = tmp_path / "escapes.gguf"
    path.write_bytes(cases["terminal-escapes-in-a-name"].data)
    command = [sys.executable, "-m", "transformer", "inspect", "--checkpoint", str(path), "--text", "hi"]
    done = subprocess.run(command, capture_output=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2 and done.stdout == b""
    assert b"\x1b" not in done.stderr and b"\x07" not in done.stderr
    assert b"\\x1b]0;pwned\\x07" in done.stderr and len(done.stderr.splitlines()) == 1


PAGE_CASES = [  # (case, words of its English message, words of its Korean one)
    ("misaligned", "not a multiple of the file's alignment", "정렬 단위"),
    ("embedding-twice-its-rows", "cannot share bytes", "같은 바이트"),
    ("alignment-3-data-at-32", "a power of two", "2의 거듭제곱"),
    ("terminal-escapes-in-a-name", "x1b]0;pwnedx07", "x1b]0;pwnedx07"),
    ("100000-character-name", "(100,018 characters)", "(100,018 characters)"),
    ("merge-not-in-vocabulary", "merge 1 of tokenizer.ggml.merges", "번째 병합"),
    ("1000000-character-token", "1,000,010 characters long", "1,000,010자"),
    ("block-count-4294967295", "below 2,147,483,648", "2,147,483,648(2³¹)보다 작은"),
]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_checkpoints_page_gives_one_clean_message_per_file(cases, lang):
    at = open_app("checkpoints", **({"lang": lang} if lang != "en" else {}))
    for case_id, english, korean in PAGE_CASES:
        at.file_uploader(key="ckpt_file").set_value(
            (f"{case_id}.gguf", cases[case_id].data, "application/octet-stream")
        )
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        errors = [e.value.replace("\\", "") for e in at.error]
        assert len(errors) == 1, (case_id, errors)
        words = english if lang == "en" else korean
        assert f"{case_id}.gguf" in errors[0] and words in errors[0], errors[0]
        assert len(errors[0]) < LONGEST_MESSAGE and "config.json" not in errors[0]
        assert not any(ord(c) < 32 for c in errors[0])


def test_merges_rebuilt_from_scores_are_the_quadratic_rebuilds(cases):
    """The bounded rebuild (split points at token lengths only) gives the very merges the plain one gives."""

    from tests.gguf_files import sentencepiece_vocab

    tokens, _, _, scores = sentencepiece_vocab()
    tokens = tokens + ["▁the▁movie▁was▁good", "xyzzy" * 200]  # a long one, and one with no split
    scores = scores + [-1.0, -2.0]
    vocab = {t: i for i, t in enumerate(tokens)}
    rebuilt = merges_from_scores(vocab, dict(zip(tokens, scores)))
    assert rebuilt == plain_merges(vocab, dict(zip(tokens, scores))) and len(rebuilt) > 100


def test_a_tensor_no_model_uses_is_listed_escaped(tmp_path):
    """A file may hold a tensor the model does not use: it loads, and the note naming it is escaped."""
    from gguf import GGMLQuantizationType

    from tests.gguf_corpus import ESCAPES
    from tests.gguf_files import Case, write_case

    path = tmp_path / "extra.gguf"
    write_case(Case("llama", "gpt2", GGMLQuantizationType.Q8_0, unused="x" + ESCAPES), path)
    notes = " ".join(load_model(path).notes)
    assert "x\\x1b]0;pwned\\x07\\x1b[2J" in notes and "\x1b" not in notes, notes


def test_nan_weights_in_a_gguf_file_blame_the_file_not_training(tmp_path, cases):
    import struct

    from transformer.hf.gguf_file import read_gguf

    good = cases["good"].data
    (tmp_path / "good.gguf").write_bytes(good)
    start = read_gguf(tmp_path / "good.gguf").tensor("output_norm.weight").start  # F32: its first value
    path = tmp_path / "nan.gguf"
    path.write_bytes(good[:start] + struct.pack("<f", float("nan")) + good[start + 4 :])
    loaded = load_model(path)
    notes = " ".join(loaded.notes)
    assert loaded.nonfinite_weights and "output_norm.weight" in notes and "once dequantised" in notes, notes
    assert "Training" not in notes and "learning rate" not in notes


def test_the_checkpoints_page_blames_a_gguf_file_for_nan_weights(tmp_path, cases):
    import struct

    from transformer.hf.gguf_file import read_gguf

    good = cases["good"].data
    (tmp_path / "good.gguf").write_bytes(good)
    start = read_gguf(tmp_path / "good.gguf").tensor("output_norm.weight").start
    nan = good[:start] + struct.pack("<f", float("nan")) + good[start + 4 :]
    at = open_app("checkpoints")
    at.file_uploader(key="ckpt_file").set_value(("nan.gguf", nan, "application/octet-stream"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = " ".join(
        str(e.value).replace("\\", "") for kind in ("warning", "caption", "error") for e in getattr(at, kind)
    )
    assert "nan.gguf hold NaN or infinite values once dequantised" in shown, shown
    assert "The file is damaged or was quantised wrongly" in shown
    assert "diverged" not in shown and "learning rate" not in shown


@pytest.mark.parametrize(
    "case_id, lang, words",
    [
        ("misaligned", "en", "not a multiple of the file's alignment"),
        ("terminal-escapes-in-a-name", "ko", "x1b]0;pwnedx07"),
        ("1000000-character-token", "ko", "1,000,010자"),
    ],
)
def test_the_generate_page_says_why_a_servers_gguf_cannot_be_opened(tmp_path, cases, monkeypatch, case_id, lang, words):
    """A GGUF file the server names ($ATTENTION_LAB_MODELS) that the reader refuses: one message, no exception."""
    from ui import models

    folder = tmp_path / "hostile-model"
    folder.mkdir()
    (folder / "model.gguf").write_bytes(cases[case_id].data)
    monkeypatch.setenv(models.SERVER_MODELS_ENV, str(folder))
    at = open_app("generate", state={"gen_model": "server: hostile-model"}, **({"lang": lang} if lang != "en" else {}))
    errors = [e.value.replace("\\", "") for e in at.error]
    assert len(errors) == 1 and "model.gguf" in errors[0] and words in errors[0], errors
    assert not any(ord(c) < 32 for c in errors[0]) and len(errors[0]) < LONGEST_MESSAGE
