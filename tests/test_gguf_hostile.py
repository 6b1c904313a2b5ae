"""Hostile GGUF files: each is refused with one clear message (a ValueError naming the file and what is
wrong), before anything the header claims is allocated: a truncated file, tensor offsets past the end,
absurd shapes and counts, a metadata string claiming 2 GB, an unknown tensor type and one gguf cannot
dequantise, an unknown architecture, a vocabulary that does not match the embedding. Also through the
CLI (one ``error:`` line, exit status 2)."""

from __future__ import annotations

import struct
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from gguf import GGMLQuantizationType, GGUFWriter

from tests.gguf_files import Case, write_case
from transformer.checkpoints.errors import CodedError
from transformer.hf.gguf_file import read_gguf
from transformer.loader import load_model

ROOT = Path(__file__).resolve().parent.parent
HEADER_BYTES = 4 + 4 + 8 + 8
PEAK_BYTES = 8 * 1024**2  # what reading a hostile header may allocate at most (the good file's is ~0.2 MB)


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("good") / "tiny.gguf"
    write_case(Case("llama", "gpt2", GGMLQuantizationType.Q8_0), path)
    return path.read_bytes()


def refused(tmp_path: Path, data: bytes, code: str, *words: str) -> str:
    """The message load_model gives for ``data`` (saved as hostile.gguf), checked to carry ``code`` and
    ``words``, with the header's reading bounded in memory."""
    path = tmp_path / "hostile.gguf"
    path.write_bytes(data)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as caught:
            load_model(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(caught.value, CodedError) and caught.value.code == f"gguf_{code}", caught.value
    message = str(caught.value)
    assert "hostile.gguf" in message and "\n" not in message and "Traceback" not in message
    for word in words:
        assert word in message, message
    assert peak < PEAK_BYTES or code in ("tokenizer_mismatch", "architecture"), peak
    return message


def info_at(data: bytes, name: str) -> int:
    """Where tensor ``name``'s info continues after its name (its dimension count)."""
    needle = struct.pack("<Q", len(name)) + name.encode()
    index = data.index(needle)
    return index + len(needle)


def test_the_good_file_loads(tmp_path, good):
    (tmp_path / "tiny.gguf").write_bytes(good)
    assert load_model(tmp_path / "tiny.gguf").tensor_types["Q8_0"] == 16


@pytest.mark.parametrize(
    "keep, code",
    [(3, "truncated"), (10, "truncated"), (HEADER_BYTES + 40, "absurd_count"), (0.5, "past_end"), (0.999, "past_end")],
)
def test_a_truncated_file(tmp_path, good, keep, code):
    """Cut in the magic, the counts, the metadata (21 tensors claimed, room for 2), the tensors' data."""
    size = int(len(good) * keep) if isinstance(keep, float) else keep
    refused(tmp_path, good[:size], code, "damaged or cut off")


def test_an_empty_file(tmp_path):
    refused(tmp_path, b"", "empty", "empty")


def test_a_tensor_offset_past_the_end(tmp_path, good):
    at = info_at(good, "output_norm.weight")
    offset = at + 4 + 8 + 4  # one dimension, then the type, then the offset
    data = good[:offset] + struct.pack("<Q", 2**40) + good[offset + 8 :]
    refused(tmp_path, data, "past_end", "output_norm.weight", "ends past the end")


def test_absurd_shapes(tmp_path, good):
    at = info_at(good, "output_norm.weight")
    huge = good[: at + 4] + struct.pack("<Q", 2**62) + good[at + 12 :]
    refused(tmp_path, huge, "bad_shape", "output_norm.weight", "4,611,686,018,427,387,904")
    many_dims = good[:at] + struct.pack("<I", 1000) + good[at + 4 :]
    refused(tmp_path, many_dims, "bad_shape", "1000 dimensions")
    zero = good[: at + 4] + struct.pack("<Q", 0) + good[at + 12 :]
    refused(tmp_path, zero, "bad_shape", "output_norm.weight")


@pytest.mark.parametrize("field, code", [(8, "absurd_count"), (16, "absurd_count")], ids=["tensors", "metadata"])
def test_absurd_counts(tmp_path, good, field, code):
    data = good[:field] + struct.pack("<Q", 2**60) + good[field + 8 :]
    refused(tmp_path, data, code, "1,152,921,504,606,846,976")


def test_a_metadata_string_claiming_2_gb(tmp_path, good):
    key = b"general.architecture"
    at = good.index(struct.pack("<Q", len(key)) + key) + 8 + len(key) + 4  # the value's length
    data = good[:at] + struct.pack("<Q", 2**31) + good[at + 8 :]
    refused(tmp_path, data, "too_long", "2,147,483,648 bytes")
    under_cap = good[:at] + struct.pack("<Q", 10 * 1024**2) + good[at + 8 :]  # under the cap, past the end
    refused(tmp_path, under_cap, "truncated", "10,485,760 bytes")


def test_an_array_claiming_more_strings_than_the_file_holds(tmp_path, good):
    key = b"tokenizer.ggml.tokens"
    at = good.index(struct.pack("<Q", len(key)) + key) + 8 + len(key) + 4 + 4  # type ARRAY, element type
    data = good[:at] + struct.pack("<Q", 3_000_000) + good[at + 8 :]
    refused(tmp_path, data, "absurd_count", "3,000,000 strings in tokenizer.ggml.tokens")


@pytest.mark.parametrize(
    "number, code, words",
    [(99, "unknown_type", ("type number 99",)), (9, "unsupported_type", ("Q8_1",)), (26, "unsupported_type", ("I32",))],
)
def test_a_tensor_type_that_cannot_be_read(tmp_path, good, number, code, words):
    at = info_at(good, "output_norm.weight")
    data = good[: at + 4 + 8] + struct.pack("<I", number) + good[at + 4 + 8 + 4 :]
    refused(tmp_path, data, code, "output_norm.weight", *words)


def test_an_unknown_architecture(tmp_path):
    writer = GGUFWriter(str(tmp_path / "hostile.gguf"), "falcon")
    writer.add_block_count(1)
    import numpy as np

    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    refused(tmp_path, (tmp_path / "hostile.gguf").read_bytes(), "architecture", "'falcon'", "llama, qwen2")


def test_a_vocabulary_that_does_not_match_the_embedding(tmp_path):
    write_case(Case("llama", "gpt2", extra_tokens=50), tmp_path / "other.gguf")
    message = refused(tmp_path, (tmp_path / "other.gguf").read_bytes(), "tokenizer_mismatch", "350 tokens", "300 rows")
    assert "does not belong" in message


def test_a_tensor_listed_twice(tmp_path, good):
    data = good.replace(b"blk.1.attn_k.weight", b"blk.0.attn_k.weight")
    refused(tmp_path, data, "twice", "blk.0.attn_k.weight twice")


def test_not_a_gguf_file(tmp_path):
    refused(tmp_path, b"PK\x03\x04" + bytes(100), "not_gguf", "not a GGUF file")


def test_the_header_of_the_good_file_reads_in_little_memory(tmp_path, good):
    (tmp_path / "tiny.gguf").write_bytes(good)
    tracemalloc.start()
    read_gguf(tmp_path / "tiny.gguf")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < PEAK_BYTES


def test_the_cli_says_what_is_wrong_in_one_line_and_exits_2(tmp_path, good):
    (tmp_path / "cut.gguf").write_bytes(good[:5000])
    (tmp_path / "tiny.gguf").write_bytes(good)
    command = [sys.executable, "-m", "transformer", "inspect", "--checkpoint"]
    bad = subprocess.run(
        [*command, str(tmp_path / "cut.gguf"), "--text", "hi"], capture_output=True, text=True, cwd=ROOT
    )
    assert bad.returncode == 2 and bad.stdout == ""
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cut.gguf") and "cut off" in lines[0], bad.stderr
    ok = subprocess.run(
        [*command, str(tmp_path / "tiny.gguf"), "--text", "the movie", "--attention", "none"],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    import json

    record = json.loads(ok.stdout)
    assert record["model"]["format"] == "gguf" and "16 Q8_0" in record["model"]["notes"][0]
    assert record["inputs"][0]["ids"] and record["inputs"][0]["prediction"]["next_tokens"]


def test_an_uploaded_gguf_is_checked_in_the_reader_and_opened_by_the_server(good):
    from transformer.checkpoints import recognise_upload
    from transformer.checkpoints.upload_kinds import HFFolderUpload

    found = recognise_upload("tiny.gguf", good)
    assert isinstance(found, HFFolderUpload) and found.files == (("tiny.gguf", len(good)),)
    assert found.loaded.format == "gguf" and found.loaded.tensor_types["Q8_0"] == 16
    assert found.loaded.lm_tokenizer.encode("the movie").ids == found.loaded.text_encoder().encode("the movie").ids


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_an_uploaded_hostile_gguf_is_refused_in_the_readers_language(good, lang):
    from transformer.checkpoints import recognise_upload
    from ui.checkpoint_text import problem_of, problem_text

    at = info_at(good, "output_norm.weight")
    data = good[: at + 4 + 8] + struct.pack("<I", 9) + good[at + 4 + 8 + 4 :]  # Q8_1: not dequantisable
    with pytest.raises(CodedError) as caught:
        recognise_upload("model.gguf", data)
    text = problem_text(problem_of(caught.value), lang)
    assert "model.gguf" in text and "Q8_1" in text and "output_norm.weight" in text
    assert ("역양자화" in text) == (lang == "ko")
