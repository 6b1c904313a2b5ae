"""Marian's tokenizer (transformer.hf.spm) gives transformers' MarianTokenizer ids on English, Korean
and mixed text. Tiny SentencePiece models are trained here on a few hundred lines (offline)."""

import json
import random
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from tests.hf_models import tiny_marian_config
from transformer.analysis.analyze import analyze
from transformer.core.tokenizer import TextEncoder
from transformer.hf.importer import load_hf_folder
from transformer.hf.marian import import_marian
from transformer.hf.spm import MarianTokenizer, read_vocab_json, readable

sentencepiece = pytest.importorskip("sentencepiece")
transformers = pytest.importorskip("transformers")

ENGLISH = "the movie was great and the actors were not bad but the plot was boring I loved it".split()
KOREAN = "영화가 정말 좋았다 배우들의 연기는 나쁘지 않았지만 줄거리가 지루했다 나는 이 영화를 사랑한다".split()
MARKS = [",", ".", "!", "?", "'", '"', "(", ")", "-", "123", "2024", "😀", "ㅋㅋ", "café"]
DROPPED = 5  # pieces of the source model left out of vocab.json: read as <unk>


def _lines(rng: random.Random, count: int) -> list[str]:
    words = ENGLISH + KOREAN + MARKS
    return [" ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) for _ in range(count)]


def _train(folder, name: str, lines: list[str], size: int) -> None:
    (folder / f"{name}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    sentencepiece.SentencePieceTrainer.train(
        input=str(folder / f"{name}.txt"),
        model_prefix=str(folder / name),
        vocab_size=size,
        character_coverage=1.0,
        hard_vocab_limit=False,  # at most this many pieces: a few hundred lines may not yield more
        minloglevel=2,
    )
    (folder / f"{name}.model").rename(folder / f"{name}.spm")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """source.spm (mostly Korean), target.spm (mostly English) and one vocab.json as Marian's:
    </s> 0, <unk> 1, the pieces, <pad> last."""
    folder = tmp_path_factory.mktemp("marian_tok")
    rng = random.Random(0)
    _train(folder, "source", _lines(rng, 300) + [" ".join(KOREAN)] * 30, 120)
    _train(folder, "target", _lines(rng, 300) + [" ".join(ENGLISH)] * 30, 100)
    pieces = []
    for name in ("source", "target"):
        processor = sentencepiece.SentencePieceProcessor(model_file=str(folder / f"{name}.spm"))
        listed = [processor.IdToPiece(i) for i in range(processor.GetPieceSize())]
        listed = [p for p in listed if p not in ("<unk>", "<s>", "</s>")]
        pieces += [p for p in (listed[:-DROPPED] if name == "source" else listed) if p not in pieces]
    vocab = {"</s>": 0, "<unk>": 1} | {p: i + 2 for i, p in enumerate(pieces)}
    vocab["<pad>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def reference(folder):
    return transformers.MarianTokenizer(
        source_spm=str(folder / "source.spm"), target_spm=str(folder / "target.spm"), vocab=str(folder / "vocab.json")
    )


def fuzzed_texts() -> list[str]:
    rng = random.Random(7)
    fixed = [
        "the movie was great",
        "영화가 정말 좋았다",
        "I loved 이 영화를 so much!",
        "  leading and trailing spaces  ",
        "tabs\tand\nnew lines",
        "숫자 2024년 3월, price $12.50",
        "😀 emoji and ㅋㅋㅋ",
        "Café naïve façade",
        "xyzzy qwrtp zzz",  # letters rarely or never seen in training
        ">>kor<< the movie",
        "",
        "한",
    ]
    pool = ENGLISH + KOREAN + MARKS + ["  ", "\t", "Ünïcödé", "漢字", "ﾊﾝｶｸ", "Ａ"]
    mixed = [
        "".join(rng.choice(pool) + rng.choice(["", " ", " "]) for _ in range(rng.randint(1, 10))) for _ in range(60)
    ]
    return fixed + mixed


def test_ids_and_pieces_equal_marian_tokenizer(folder, reference):
    ours = MarianTokenizer.from_folder(folder)
    unknown_seen = 0
    for text in fuzzed_texts():
        encoded = ours.encode(text)
        assert encoded.ids == reference(text).input_ids, text
        assert encoded.pieces == reference.tokenize(text) + ["</s>"], text
        unknown_seen += sum(encoded.unknown)
    assert unknown_seen > 0  # the pieces left out of vocab.json were met and read as <unk>


def test_target_side_equals_marian_tokenizer(folder, reference):
    ours = MarianTokenizer.from_folder(folder)
    for text in fuzzed_texts():
        assert ours.encode_target(text).ids == reference(text_target=text).input_ids, text


def test_the_apps_text_encoder_gives_the_same_ids(folder, reference):
    """LoadedModel.text_encoder() splits with the tokenizer and looks pieces up in the vocabulary."""
    ours = MarianTokenizer.from_folder(folder)
    encoder = TextEncoder(ours.vocab, split=ours.split)
    for text in fuzzed_texts():
        assert encoder.encode(text).ids == reference(text).input_ids, text


def test_decode_equals_marian_tokenizer(folder, reference):
    ours = MarianTokenizer.from_folder(folder)
    for text in ["the movie was great", "I loved it, really!", "영화가 좋았다"]:
        ids = reference(text_target=text).input_ids
        start = [ours.vocab.pad_id]
        assert ours.decode(start + ids) == reference.decode(start + ids, skip_special_tokens=True)


def test_pieces_are_shown_readably():
    assert readable("▁movie") == "␣movie"
    assert readable("▁") == "␣"
    assert readable("는") == "는"


def test_bad_tokenizer_files_are_named(folder, tmp_path):
    (tmp_path / "vocab.json").write_text('{"<unk>": 0, "<pad>": 5}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"vocab\.json: the ids must be 0 \.\. 1"):
        read_vocab_json(tmp_path / "vocab.json")
    (tmp_path / "source.spm").write_bytes(b"not a model")
    (tmp_path / "target.spm").write_bytes((folder / "target.spm").read_bytes())
    (tmp_path / "vocab.json").write_text((folder / "vocab.json").read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(ValueError, match=r"source\.spm is not a SentencePiece model"):
        MarianTokenizer.from_folder(tmp_path)
    (tmp_path / "source.spm").unlink()
    with pytest.raises(FileNotFoundError, match=r"source\.spm is missing"):
        MarianTokenizer.from_folder(tmp_path)


def test_an_imported_translator_reads_text_as_transformers_does(folder, reference, tmp_path):
    """A tiny random Marian model with this vocabulary: analyze() on text (the pages' path) gives
    transformers' ids, encoder and cross attention, and greedy translation."""
    torch.set_num_threads(1)
    tokenizer = MarianTokenizer.from_folder(folder)
    pad = tokenizer.vocab.pad_id
    hf_config = tiny_marian_config(len(tokenizer.vocab), pad)
    torch.manual_seed(0)
    transformers.MarianMTModel(hf_config).save_pretrained(tmp_path)
    model = transformers.MarianMTModel.from_pretrained(tmp_path, attn_implementation="eager").eval()
    direct = import_marian(model.config.to_dict(), load_file(str(tmp_path / "model.safetensors")), tokenizer)
    for name in ("source.spm", "target.spm", "vocab.json"):  # the folder as the Hub holds it
        shutil.copy(folder / name, tmp_path / name)
    loaded = load_hf_folder(tmp_path)  # what the Checkpoints page and the CLI open
    assert loaded.text_encoder().encode("I loved 이 영화를!") == direct.text_encoder().encode("I loved 이 영화를!")
    text = "I loved 이 영화를!"
    result = analyze(loaded, [text])
    ids = reference(text).input_ids
    assert result.ids[0].tolist() == ids
    assert result.tokens[0] == reference.tokenize(text) + ["</s>"]
    with torch.no_grad():
        expected = model.generate(torch.tensor([ids]), num_beams=1, do_sample=False, max_new_tokens=len(ids) * 2 + 10)
        theirs = model(input_ids=torch.tensor([ids]), decoder_input_ids=expected, output_attentions=True)
    assert result.decoder_tokens[0] == [tokenizer.target_vocab.id_to_token(i) for i in expected[0].tolist()]
    assert np.abs(result.attention[0] - torch.stack(theirs.encoder_attentions, 1)[0].numpy()).max() < 1e-5
    assert np.abs(result.cross_attention[0] - torch.stack(theirs.cross_attentions, 1)[0].numpy()).max() < 1e-5


def test_a_tokenizer_of_another_size_is_refused(folder):
    tokenizer = MarianTokenizer.from_folder(folder)
    config = transformers.MarianConfig(vocab_size=len(tokenizer.vocab) + 3, pad_token_id=0).to_dict()
    with pytest.raises(ValueError, match=r"vocab\.json has \d+ pieces but the weights have"):
        import_marian(
            config | {"d_model": 32, "encoder_attention_heads": 4, "decoder_attention_heads": 4}, {}, tokenizer
        )
