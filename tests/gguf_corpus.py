"""A corpus of hostile GGUF files (issue 56), crafted from a good tiny file written with ``gguf.GGUFWriter``
(:mod:`tests.gguf_files`) by patching its bytes, or written by the writer with a hostile vocabulary or
chat template. Each case names the refusal code it must get (``None``: it must load) and words its
message must hold. Used by the tests (``load_model``, the CLI, the Checkpoints page) and by
``bench/bench_gguf_hostile.py`` (time and peak memory of each).

The layout cases break the rules llama.cpp enforces (``gguf_init_from_file``): an offset off the
alignment, two tensors at one offset, a tied embedding claiming twice its rows (its bytes run into the
next tensor), a gap, ``general.alignment`` 3 (with the data laid out at 3, and at 32)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter

from tests.gguf_files import Case, write_case

ESCAPES = "\x1b]0;pwned\x07\x1b[2J"  # retitles the terminal, then clears it
LONG_NAME_CHARS = 18 + 32 * 3125  # 100,018: output_norm.weight's 18 bytes plus a multiple of the alignment
LONG_TOKEN_CHARS = 1_000_000


@dataclass(frozen=True)
class Hostile:
    """One crafted file: its bytes, the refusal code it must get (None: loads), words its message holds."""

    id: str
    data: bytes
    code: str | None
    words: tuple[str, ...] = ()


def string_at(data: bytes, text: str, start: int = 0) -> int:
    """Where the GGUF string ``text`` (u64 length, then its bytes) starts in ``data``."""
    raw = text.encode()
    return data.index(struct.pack("<Q", len(raw)) + raw, start)


def info_at(data: bytes, name: str) -> int:
    """Where tensor ``name``'s info continues after its name (its dimension count)."""
    return string_at(data, name) + 8 + len(name.encode())


def offset_at(data: bytes, name: str) -> int:
    """Where tensor ``name``'s offset (u64) is."""
    at = info_at(data, name)
    dims = struct.unpack_from("<I", data, at)[0]
    return at + 4 + 8 * dims + 4


def with_u64(data: bytes, at: int, value: int) -> bytes:
    return data[:at] + struct.pack("<Q", value) + data[at + 8 :]


def with_u32(data: bytes, at: int, value: int) -> bytes:
    return data[:at] + struct.pack("<I", value) + data[at + 4 :]


def value_at(data: bytes, key: str) -> int:
    """Where metadata ``key``'s value starts (after its type)."""
    return string_at(data, key) + 8 + len(key.encode()) + 4


def offset_of(data: bytes, name: str) -> int:
    return struct.unpack_from("<Q", data, offset_at(data, name))[0]


def renamed(data: bytes, old: str, new: str) -> bytes:
    """``data`` with the GGUF string ``old`` (a name, a key, a token) replaced by ``new``; the header's growth
    must be a multiple of 32 bytes so that the data section stays where the offsets say."""
    at = string_at(data, old)
    grown = len(new.encode()) - len(old.encode())
    assert grown % 32 == 0, grown
    return data[:at] + struct.pack("<Q", len(new.encode())) + new.encode() + data[at + 8 + len(old.encode()) :]


def good_file(tmp: Path, case: Case = Case("llama", "gpt2", GGMLQuantizationType.Q8_0)) -> bytes:
    path = tmp / "good.gguf"
    write_case(case, path)
    return path.read_bytes()


def with_alignment(tmp: Path, key_only: bool) -> bytes:
    """A tiny model whose general.alignment is 3: its data laid out at 3 (``key_only`` False) or at 32."""
    path = tmp / "aligned3.gguf"
    writer = GGUFWriter(str(path), "llama")
    if not key_only:
        writer.data_alignment = 3  # the writer itself refuses 3 through add_custom_alignment
    writer.add_uint32("general.alignment", 3)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.add_tensor("output_norm.weight", np.ones(8, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path.read_bytes()


def layout_cases(tmp: Path, good: bytes) -> list[Hostile]:
    q, k, v = (f"blk.0.attn_{x}.weight" for x in "qkv")
    tied = good_file(tmp, Case("llama", "gpt2", GGMLQuantizationType.F32, tied=True))
    rows_at = info_at(tied, "token_embd.weight") + 4 + 8  # ne[1]: the embedding's rows
    rows = struct.unpack_from("<Q", tied, rows_at)[0]
    return [
        Hostile("misaligned", with_u64(good, offset_at(good, k), offset_of(good, k) + 4), "gguf_misaligned",
                (k, "not a multiple of the file's alignment (32 bytes)")),
        Hostile("same-offset", with_u64(good, offset_at(good, k), offset_of(good, q)), "gguf_overlap",
                (k, q, "cannot share bytes")),
        Hostile("embedding-twice-its-rows", with_u64(tied, rows_at, 2 * rows), "gguf_overlap",
                ("token_embd.weight", "inside the bytes of tensor token_embd.weight")),
        Hostile("gap", with_u64(good, offset_at(good, v), offset_of(good, v) + 64), "gguf_gap",
                (v, "64 unused bytes")),
        Hostile("alignment-3-data-at-3", with_alignment(tmp, False), "gguf_alignment",
                ("general.alignment is 3", "a power of two and a multiple of 8")),
        Hostile("alignment-3-data-at-32", with_alignment(tmp, True), "gguf_alignment", ("general.alignment is 3",)),
    ]  # fmt: skip


def name_cases(good: bytes) -> list[Hostile]:
    """Names from the file shown escaped and cut: a name full of terminal escapes, a 100,018-character name."""
    escaped = "output_norm.weight"[: 18 - len(ESCAPES)] + ESCAPES
    assert len(escaped.encode()) == 18
    unknown_type = renamed(good, "output_norm.weight", escaped)
    at = info_at(unknown_type, escaped) + 4 + 8
    unknown_type = with_u32(unknown_type, at, 99)  # and a type no GGML has: the message names the tensor
    long_name = renamed(good, "output_norm.weight", "n" * LONG_NAME_CHARS)
    return [
        Hostile("terminal-escapes-in-a-name", unknown_type, "gguf_unknown_type", ("\\x1b]0;pwned\\x07",)),
        Hostile("100000-character-name", long_name, "gguf_name_too_long", ("(100,018 characters)", "100,018 bytes")),
    ]


def vocabulary_cases(tmp: Path, good: bytes) -> list[Hostile]:
    """A merge naming tokens the vocabulary lacks, a missing tokenizer.ggml.model, a 1,000,000-character token
    in a SentencePiece vocabulary without merges (rebuilt from scores)."""
    key = "tokenizer.ggml.merges"
    first = value_at(good, key) + 4 + 8  # element type, count, then the first merge
    length = struct.unpack_from("<Q", good, first)[0]
    bad = ("\x1b" * (length - 2) + " z").encode()
    bad_merge = good[: first + 8] + bad + good[first + 8 + length :]
    no_model = good.replace(b"tokenizer.ggml.model", b"tokenizer.ggml.mode_", 1)
    spm = good_file(tmp, Case("llama", "llama", GGMLQuantizationType.Q8_0, merges=False))
    long_token = renamed(spm, "<|im_end|>", "<|im_end|>" + "x" * (32 * (LONG_TOKEN_CHARS // 32)))
    odd_start = renamed(good, "<|im_start|>", "<a b:0 $A:0>")  # the start token, spaces and all
    return [
        Hostile("start-token-outside-the-byte-alphabet", odd_start, None),
        Hostile("merge-not-in-vocabulary", bad_merge, "gguf_bad_merge", ("merge 1 of tokenizer.ggml.merges", "\\x1b")),
        Hostile("no-tokenizer-model", no_model, "gguf_no_tokenizer_model", ("tokenizer.ggml.model is missing",)),
        Hostile("1000000-character-token", long_token, "gguf_token_too_long", ("1,000,010 characters long",)),
    ]


def metadata_cases(good: bytes) -> list[Hostile]:
    """Values the importer refuses (they once spoke of a config.json) and a count at 2**32 - 1."""
    layers = with_u32(good, value_at(good, "llama.block_count"), 2**32 - 1)
    wide = with_u32(good, value_at(good, "llama.feed_forward_length"), 100_000)
    missing = renamed(good, "blk.1.ffn_up.weight", "blk.1.ffn_uq.weight")
    no_norm = renamed(good, "blk.1.attn_norm.weight", "blk.1.attn_morm.weight")
    return [
        Hostile("block-count-4294967295", layers, "gguf_not_count", ("below 2,147,483,648", "4,294,967,295")),
        Hostile("feed-forward-over-the-cap", wide, "gguf_settings", ("its metadata describes", "d_ff")),
        Hostile("a-layer-tensor-missing", missing, "gguf_settings", ("blk.1.ffn_up.weight",)),
        Hostile("a-layer-norm-missing", no_norm, "gguf_settings", ("lacks blk.1.attn_norm.weight,",)),
    ]


CASE_IDS = (
    "good", "misaligned", "same-offset", "embedding-twice-its-rows", "gap", "alignment-3-data-at-3",
    "alignment-3-data-at-32", "terminal-escapes-in-a-name", "100000-character-name",
    "start-token-outside-the-byte-alphabet", "merge-not-in-vocabulary",
    "no-tokenizer-model", "1000000-character-token", "block-count-4294967295", "feed-forward-over-the-cap",
    "a-layer-tensor-missing", "a-layer-norm-missing",
)  # fmt: skip
LOADS = ("good", "start-token-outside-the-byte-alphabet")  # the cases that must load; the others are refused


def corpus(tmp: Path) -> list[Hostile]:
    """Every crafted file, the good one first (it must load)."""
    good = good_file(tmp)
    cases = [Hostile("good", good, None)]
    return cases + layout_cases(tmp, good) + name_cases(good) + vocabulary_cases(tmp, good) + metadata_cases(good)


def plain_merges(vocab: dict[str, int], scores: dict[str, float]) -> list[tuple[str, str]]:
    """The merges rebuild issue 56 replaced, kept as the reference: every split of every token (a token of n
    characters costs n slices of up to n characters)."""
    found = []
    for merge, score in scores.items():
        local = [
            (merge[:i], merge[i:], score) for i in range(1, len(merge)) if merge[:i] in vocab and merge[i:] in vocab
        ]
        found.extend(sorted(local, key=lambda x: (vocab[x[0]], vocab[x[1]])))
    found.sort(key=lambda x: (x[2], len(x[0]), len(x[1])), reverse=True)
    return [(a, b) for a, b, _ in found]


CHAT_TEMPLATES = {  # template -> the ChatTemplateError code it must get
    "{% for i in range(10**9) %}{% endfor %}": "chat_range",
    "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}": "chat_range",
    "{% for i in 'x' * 100000 %}{% for j in 'x' * 100000 %}{% endfor %}{% endfor %}": "chat_time",
    "{{ (10 ** (10 ** 8)) % 7 }}": "chat_number",
    "{{ 'a' * 4000000000 }}": "chat_size",
    "{% set ns = namespace(s='a') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}": "chat_memory",
    "{% macro f(x) %}{{ f(x) }}{% endmacro %}{{ f(1) }}": "chat_recursion",
    "{{ raise_exception('" + ESCAPES + "') }}": "chat_refused",
    "{{ messages.__class__.__mro__ }}": "chat_broken",
    "{% for %}": "chat_broken",
}  # fmt: skip
