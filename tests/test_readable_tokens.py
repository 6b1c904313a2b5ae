"""The lens's and the bars' tokens as readable text (issue 50, item 4) and user text echoed safely (item 8)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from transformer import load_bundle
from transformer.core.bpe_text import _byte_of_char
from transformer.residual.lens import Lens
from ui.echo import cut_to_limit, echo, shortened
from ui.readable_tokens import (
    never_offered,
    piece_bytes,
    special_text,
    spelled,
    spelled_sequence,
    text_piece,
    token_shown,
    tokens_shown,
)
from ui.residual import without_tokens

from .app_helpers import ROOT

ALPHABET = {b: ch for ch, b in _byte_of_char().items()}


def written(raw: bytes) -> str:
    """Bytes in GPT-2's byte alphabet, as a byte-level BPE vocabulary writes them."""
    return "".join(ALPHABET[b] for b in raw)


def test_a_piece_is_spelled_with_spaces_and_line_breaks_visible():
    assert spelled(piece_bytes("Ġthe", True), "Ġthe") == "␣the"
    assert spelled(piece_bytes("ĊĊ", True), "ĊĊ") == "↵↵"
    assert spelled(piece_bytes("ĉ", True), "ĉ") == "⇥"
    assert spelled(b"\x02", written(b"\x02")) == "<02>"  # a control character, never a tofu box
    assert spelled(piece_bytes(written("영화".encode()), True), "") == "영화"


def test_part_of_a_character_alone_is_shown_as_its_bytes_never_as_backslash_text():
    shown = spelled(bytes([0xF2]), written(bytes([0xF2])))
    assert shown == "<F2>" and "\\x" not in shown
    assert spelled(bytes([0x98, 0x81]) + "화".encode(), "") == "<9881>화"


def test_special_tokens_are_marked():
    assert special_text("<|endoftext|>") == "⟨endoftext⟩"
    assert special_text("</s>") == "⟨/s⟩"
    assert spelled(None, "<|im_end|>", special=True) == "⟨im_end⟩"


def test_sentencepiece_pieces_and_byte_fallback():
    assert spelled(piece_bytes("▁movie", False), "▁movie") == "␣movie"
    assert piece_bytes("<0x0A>", False) == b"\n"


def test_a_character_split_over_two_tokens_is_shown_whole_on_each():
    raw = "좋은 영화".encode()
    pieces = [raw[:2], raw[2:4], raw[4:]]
    shown = spelled_sequence(pieces, [written(p) for p in pieces], [False] * 3)
    assert shown == ["좋…", "…좋은…", "…은␣영화"]


def test_review_lm_tokens_pad_never_offered_and_typed_tokens_found():
    loaded = load_bundle(ROOT / "assets" / "models" / "review-lm")
    tok = loaded.lm_tokenizer
    pad, unk, eot = (tok.token_to_id(n) for n in ("<pad>", "<unk>", "<|endoftext|>"))
    assert never_offered(loaded) == {pad, unk}
    assert token_shown(loaded, eot) == "⟨endoftext⟩"
    ids = [eot, *tok.encode("영화가 좋았다").ids]
    shown = tokens_shown(loaded, ids)
    assert shown[0] == "⟨endoftext⟩"
    assert "".join(s.strip("…") for s in shown[1:]).replace("…", "").startswith("영")
    assert all("\\x" not in s for s in shown)
    the = tok.token_to_id("Ġthe")
    assert text_piece(loaded, "␣the") == the and text_piece(loaded, "Ġthe") == the
    assert text_piece(loaded, "⟨endoftext⟩") == eot
    assert text_piece(loaded, "no such token at all") is None


def test_banned_tokens_leave_the_lens_candidates_in_order():
    ids = np.array([[[5, 1, 7, 9]]])
    probs = np.array([[[0.4, 0.3, 0.2, 0.1]]])
    lens = Lens(ids, probs, np.array([5]), np.zeros((1, 1), int), np.array([[0.4]]))
    kept = without_tokens(lens, frozenset({1}), 3)
    assert kept.top_ids.tolist() == [[[5, 7, 9]]]
    assert kept.top_probs.tolist() == [[[0.4, 0.2, 0.1]]]


@pytest.mark.parametrize("typed", ["![i](http://x/y.png)", "**bold** $x^2$ :red[r]", "<img src=x>"])
def test_echo_escapes_markdown_and_is_short(typed):
    shown = echo(typed * 1000)
    assert len(shown) < 200
    bare = re.sub(r"\\.", "", shown)  # what is left once every escaped character is taken out
    assert not set(bare) & set("![]()*$:<>^")


def test_cut_to_limit_says_so():
    text, message = cut_to_limit("a" * 4001, 4000)
    assert len(text) == 4000 and "4,001" in message and "4,000" in message
    assert cut_to_limit("short", 4000) == ("short", None)
    assert shortened("a\nb   c") == "a b c"
