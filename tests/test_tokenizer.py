"""basic_english against a reference copy of torchtext's regex rules; Vocab; TextEncoder."""

import json
import random
import re

import pytest

from transformer.core.tokenizer import CLS, PAD, UNK, Encoded, TextEncoder, Vocab, basic_english, to_hf_tokenizer

# Reference: torchtext.data.utils._basic_english_normalize, rules as torchtext publishes them.
_REF_PATTERNS = [r"\'", r"\"", r"\.", r"<br \/>", r",", r"\(", r"\)", r"\!", r"\?", r"\;", r"\:", r"\s+"]
_REF_REPLACEMENTS = [" '  ", "", " . ", " ", " , ", " ( ", " ) ", " ! ", " ? ", " ", " ", " "]
_REF_RULES = [(re.compile(p), r) for p, r in zip(_REF_PATTERNS, _REF_REPLACEMENTS, strict=True)]


def reference_basic_english(line: str) -> list[str]:
    line = line.lower()
    for pattern, replacement in _REF_RULES:
        line = pattern.sub(replacement, line)
    return line.split()


TRICKY = [
    "Don't do it, it's bad.",
    "I didn't like it...",
    "Great movie!<br /><br />Really.",
    "<BR />upper-case br<br/>no space<br  />two spaces",
    '<br "/>quote inside br',
    "wow!!! what?! really?? ...",
    "\"Quoted\" and 'single' quotes",
    "(parenthesised) text (nested (twice))",
    "semi;colon and colon: here; end:",
    "time 10:30, e.g. 3.5/10",
    "이 영화 정말 좋았어요! 최고.",
    "emoji 😀👍🏽 and ZWJ 👨‍👩‍👧 family",
    "עברית: סרט טוב! (מאוד)",
    "العربية، فيلم رائع! جداً.",
    "",
    "   ",
    "\t\n\r\x0b\x0c",
    "tabs\tand\nnewlines\r\nmixed",
    "nbsp\u00a0ideographic\u3000space\u2028line",
    "separators\x1cfile\x1dgroup\x1erecord\x1funit",
    "İstanbul ẞtraße Ǆ",
    "combining e\u0301 and zero\u200bwidth",
    "mixed CASE, Punct.;:!?",
    "<pad> <unk> <cls> specials typed by a user",
    "a'b\"c.d<br />e,f(g)h!i?j;k:l",
]


@pytest.mark.parametrize("text", TRICKY)
def test_basic_english_matches_torchtext_rules(text):
    assert basic_english(text) == reference_basic_english(text)


def test_final_sigma_is_the_one_known_difference():
    # Hugging Face lower-cases one character at a time; Python's str.lower knows final sigma.
    assert basic_english("ΟΔΟΣ") == ["οδοσ"]
    assert reference_basic_english("ΟΔΟΣ") == ["οδος"]


def test_basic_english_examples():
    assert basic_english("Don't!") == ["don", "'", "t", "!"]
    assert basic_english("Great movie!<br /><br />Really.") == ["great", "movie", "!", "really", "."]
    assert basic_english('He said "wow"') == ["he", "said", "wow"]
    assert basic_english("a;b:c") == ["a", "b", "c"]
    assert basic_english("...") == [".", ".", "."]
    assert basic_english("") == []
    assert basic_english(" \t\n ") == []


def test_basic_english_fuzz_against_reference():
    # Σ is left out: final sigma is the one documented difference (test above)
    chars = "aBéİ한😀א'\".,()!?;:< \t\n\u00a0\u3000\x1c\u200b\u0301"
    pieces = list(chars) + ["<br />", "<br", " />", "/>"]
    rng = random.Random(1234)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 25)))
        assert basic_english(text) == reference_basic_english(text), repr(text)


# ---- Vocab ------------------------------------------------------------------------------

CORPUS = [["b", "a", "c", "a"], ["c", "a", "d"], ["b", "e"]]  # a:3, b:2, c:2, d:1, e:1


def test_build_orders_specials_then_frequency_then_alphabet():
    vocab = Vocab.build(CORPUS, specials=[CLS])
    assert vocab.itos == [UNK, PAD, CLS, "a", "b", "c", "d", "e"]
    assert (vocab.unk_id, vocab.pad_id) == (0, 1)


def test_build_is_independent_of_input_order():
    assert Vocab.build(CORPUS) == Vocab.build(list(reversed(CORPUS)))


def test_min_freq_and_max_size():
    assert Vocab.build(CORPUS, min_freq=2).itos == [UNK, PAD, "a", "b", "c"]
    # max_size counts the specials
    assert Vocab.build(CORPUS, max_size=4).itos == [UNK, PAD, "a", "b"]
    assert len(Vocab.build(CORPUS, max_size=3, specials=[CLS])) == 3


def test_build_rejects_bad_arguments():
    with pytest.raises(ValueError, match="max_size"):
        Vocab.build(CORPUS, max_size=2, specials=[CLS])
    with pytest.raises(ValueError, match="min_freq"):
        Vocab.build(CORPUS, min_freq=0)
    with pytest.raises(ValueError, match="duplicates"):
        Vocab.build(CORPUS, specials=[CLS, CLS])


def test_specials_in_corpus_are_not_duplicated():
    vocab = Vocab.build([["<pad>", "<cls>", "x"]], specials=[CLS])
    assert vocab.itos == [UNK, PAD, CLS, "x"]


def test_lookup():
    vocab = Vocab.build(CORPUS)
    assert vocab.token_to_id("a") == 2
    assert vocab.token_to_id("never seen") == vocab.unk_id
    assert vocab.id_to_token(2) == "a"
    assert "a" in vocab and "zzz" not in vocab
    assert len(vocab) == 7
    with pytest.raises(IndexError):
        vocab.id_to_token(7)
    with pytest.raises(IndexError):
        vocab.id_to_token(-1)


def test_itos_is_a_copy():
    vocab = Vocab.build(CORPUS)
    vocab.itos.append("mutated")
    assert len(vocab) == 7


def test_save_load_round_trip(tmp_path):
    vocab = Vocab.build([["héllo", "한국어", "😀", "''", "x"]], specials=[CLS])
    path = vocab.save(tmp_path / "vocab.txt")
    assert path.read_text(encoding="utf-8").splitlines()[:3] == [UNK, PAD, CLS]
    assert Vocab.load(path) == vocab
    assert Vocab.load(tmp_path) == vocab  # a folder holding vocab.txt
    assert vocab.save(tmp_path) == tmp_path / "vocab.txt"


def test_load_keeps_ids_of_a_foreign_vocab(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"the\r\n<pad>\r\nmovie\r\n<unk>\r\n")  # Windows line endings
    vocab = Vocab.load(path)
    assert vocab.itos == ["the", PAD, "movie", UNK]
    assert (vocab.unk_id, vocab.pad_id) == (3, 1)
    assert vocab.token_to_id("nope") == 3


def test_load_json_list_and_mapping(tmp_path):
    (tmp_path / "list.json").write_text(json.dumps([UNK, PAD, "a"]))
    (tmp_path / "map.json").write_text(json.dumps({"a": 0, UNK: 1, PAD: 2}))
    (tmp_path / "gap.json").write_text(json.dumps({"a": 0, UNK: 1, PAD: 5}))
    assert Vocab.load(tmp_path / "list.json").itos == [UNK, PAD, "a"]
    assert Vocab.load(tmp_path / "map.json").itos == ["a", UNK, PAD]
    with pytest.raises(ValueError, match="ids 0 .. 2"):
        Vocab.load(tmp_path / "gap.json")


def test_save_refuses_line_breaks(tmp_path):
    with pytest.raises(ValueError, match="line break"):
        Vocab.from_itos([UNK, PAD, "a\nb"]).save(tmp_path / "vocab.txt")


@pytest.mark.parametrize(
    "itos, message",
    [
        ([], "empty"),
        ([UNK, PAD, "a", "b", "a"], "duplicate.*'a' \\(ids 2 and 4\\)"),
        ([PAD, "a"], "lacks <unk>"),
        ([UNK, "a"], "lacks <pad>"),
        (["a"], "lacks <unk> and <pad>"),
        ([UNK, PAD, None], "strings"),
    ],
)
def test_from_itos_validation(itos, message):
    with pytest.raises(ValueError, match=message):
        Vocab.from_itos(itos)


def test_from_itos_accepts_specials_anywhere():
    vocab = Vocab.from_itos(["x", PAD, "y", UNK])
    assert (vocab.unk_id, vocab.pad_id) == (3, 1)


# ---- TextEncoder ------------------------------------------------------------------------


@pytest.fixture
def encoder():
    vocab = Vocab.build([basic_english("the movie was great . i didn ' t like it !")], specials=[CLS])
    return TextEncoder(vocab)


def test_encode_marks_unknown_words(encoder):
    enc = encoder.encode("The movie was AWFUL!", max_len=10)
    assert enc.tokens == ["the", "movie", "was", "awful", "!"]
    assert enc.unknown == [False, False, False, True, False]
    assert enc.ids[3] == encoder.vocab.unk_id
    assert enc.ids[0] == encoder.vocab.token_to_id("the")
    assert (enc.truncated, enc.original_length) == (False, 5)


def test_encode_with_cls_and_truncation(encoder):
    enc = encoder.encode("the movie was great", max_len=3, add_cls=True)
    assert enc.tokens == [CLS, "the", "movie"]
    assert enc.ids[0] == encoder.vocab.token_to_id(CLS)
    assert enc.truncated and enc.original_length == 5
    assert len(enc.ids) == len(enc.unknown) == 3


def test_encode_exact_length_is_not_truncated(encoder):
    enc = encoder.encode("the movie was", max_len=3)
    assert not enc.truncated and enc.original_length == 3


def test_encode_without_limit(encoder):
    enc = encoder.encode("great " * 1000)
    assert len(enc.ids) == 1000 and not enc.truncated


@pytest.mark.parametrize("text", ["", "   ", "\n\t", '""'])
def test_text_without_words(encoder, text):
    assert encoder.encode(text, 8) == Encoded([], [], [], False, 0)
    assert encoder.encode(text, 8, add_cls=True).tokens == [CLS]


@pytest.mark.parametrize("text", TRICKY)
def test_any_unicode_encodes(encoder, text):
    enc = encoder.encode(text, max_len=512)
    assert enc.tokens == basic_english(text)
    assert len(enc.ids) == len(enc.unknown) == len(enc.tokens)


def test_encode_batch_matches_encode(encoder):
    texts = TRICKY + ["the movie was great"] * 3
    batch = encoder.encode_batch(texts, 6, add_cls=True)
    assert batch == [encoder.encode(t, 6, add_cls=True) for t in texts]
    assert encoder.encode_batch([], 6) == []


def test_encoder_argument_errors(encoder):
    with pytest.raises(ValueError, match="max_len"):
        encoder.encode("x", max_len=0)
    with pytest.raises(TypeError, match="Input 1"):
        encoder.encode_batch(["ok", None], 4)
    no_cls = TextEncoder(Vocab.build([["x"]]))
    with pytest.raises(ValueError, match="<cls>"):
        no_cls.encode("x", 4, add_cls=True)


def test_encoded_is_frozen(encoder):
    enc = encoder.encode("the movie", 4)
    with pytest.raises(AttributeError):
        enc.truncated = True


# ---- Hugging Face export ----------------------------------------------------------------


@pytest.mark.parametrize("text", [t for t in TRICKY if "<pad>" not in t])
def test_hf_tokenizer_agrees_with_basic_english(text):
    words = basic_english(text)
    vocab = Vocab.build([words[::2]])  # every other word known, the rest <unk>
    ours = TextEncoder(vocab).encode(text)
    hf = to_hf_tokenizer(vocab).encode(text)
    assert hf.ids == ours.ids


def test_typed_special_tokens_are_unknown_words(encoder):
    enc = encoder.encode("<pad> <cls> movie")
    assert enc.ids[:2] == [encoder.vocab.unk_id] * 2 and enc.unknown[:2] == [True, True]
