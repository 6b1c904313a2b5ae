"""Korean text: the NSMC-style and SST-2 readers, WordPiece pieces saved beside a model, morphemes and
syllables, and a Korean model trained end to end on a fixture the test writes."""

import gzip
import json
import unicodedata

import pytest

from transformer import analyze, load_model
from transformer.bundle import load_bundle
from transformer.core.pieces import PieceSplitter, syllables, train_wordpiece
from transformer.core.tokenizer import TextEncoder, Vocab
from transformer.text.corpora import load_nsmc, load_sst2, untokenize_ptb
from transformer.text.train import main as train_main

POSITIVE = [
    "정말 재미있어요 최고의 영화",
    "배우들 연기가 좋았다 강추",
    "감동적인 영화였어요 ㅠㅠ 최고",
    "재밌다 또 보고싶다",
]
NEGATIVE = [
    "정말 재미없어요 최악의 영화",
    "배우들 연기가 별로였다 비추",
    "지루한 영화였어요 ㅡㅡ 최악",
    "재미없다 시간낭비",
]
TRICKY = [
    "영화는재미없었다",  # no spaces between words
    "ㅋㅋㅋㅋ ㅠㅠ ㅡㅡ;;",  # bare jamo
    "최고👍🎬 10점!!",  # emoji and numbers
    "This movie 진짜 good 이었음",  # mixed scripts
    unicodedata.normalize("NFD", "재미있다"),  # decomposed syllables, as macOS file names store them
    "",
]


def write_nsmc(folder, reviews_per_label=40):
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "test"):
        rows = ["id\tdocument\tlabel"]
        for i in range(reviews_per_label):
            rows.append(f"{2 * i}\t{POSITIVE[i % 4]} {i % 7}\t1")
            rows.append(f"{2 * i + 1}\t{NEGATIVE[i % 4]} {i % 5}\t0")
        with gzip.open(folder / f"nsmc_style_{split}.tsv.gz", "wt", encoding="utf-8") as f:
            f.write("\n".join(rows) + "\n")
    return folder


def test_nsmc_reader_reads_text_and_labels(tmp_path):
    folder = write_nsmc(tmp_path / "nsmc", 3)
    train = load_nsmc(folder, "train")
    assert len(train) == 6 and train[0].text == "정말 재미있어요 최고의 영화 0" and train[0].label == 1
    assert train[1].label == 0


def test_nsmc_reader_names_a_bad_line(tmp_path):
    folder = tmp_path / "nsmc"
    folder.mkdir()
    with gzip.open(folder / "nsmc_style_train.tsv.gz", "wt", encoding="utf-8") as f:
        f.write("id\tdocument\tlabel\n1\t좋아요\t1\n2\t별로\t7\n")
    with pytest.raises(ValueError, match="line 3"):
        load_nsmc(folder, "train")
    with pytest.raises(FileNotFoundError, match="ATTENTION_LAB_NSMC"):
        load_nsmc(folder, "test")


def test_sst2_sentences_read_as_typed(tmp_path):
    path = tmp_path / "stsa.binary.train"
    path.write_text("1 it 's not bad -lrb- really -rrb- .\n0 i did n't like it , sadly .\n", encoding="utf-8")
    examples = load_sst2(path)
    assert [e.label for e in examples] == [1, 0]
    assert examples[0].text == "it's not bad (really)."
    assert examples[1].text == "i didn't like it, sadly."
    assert untokenize_ptb("`` great '' !") == '"great"!'


@pytest.fixture(scope="module")
def splitter():
    texts = POSITIVE + NEGATIVE + ["영화는 재미없었다", "영화를 봤다", "this movie was good"]
    return PieceSplitter(train_wordpiece(texts * 5, vocab_size=300, min_frequency=1))


def test_pieces_cover_korean_and_keep_unknown_characters(splitter):
    pieces = splitter.split("영화는 재미없었다 ✈")
    assert "".join(p.removeprefix("##") for p in pieces) == "영화는재미없었다✈"
    assert pieces[-1] == "✈"  # an unknown piece is shown as the character it covers
    encoded = TextEncoder(Vocab(splitter.vocabulary), split=splitter.split).encode("영화는 재미없었다 ✈")
    assert encoded.unknown[-1] and not any(encoded.unknown[:-1])


def test_bare_jamo_stay_jamo_and_decomposed_syllables_compose(splitter):
    assert "".join(splitter.split("ㅋㅋ")).replace("#", "") == "ㅋㅋ"
    assert splitter.split(unicodedata.normalize("NFD", "재미")) == splitter.split("재미")


@pytest.mark.parametrize("text", TRICKY)
def test_pieces_round_trip_through_tokenizer_json(splitter, tmp_path, text):
    splitter.save(tmp_path)
    again = PieceSplitter.load(tmp_path / "tokenizer.json")
    assert again.split(text) == splitter.split(text)
    assert again.vocabulary == splitter.vocabulary


def test_a_tokenizer_json_that_is_not_wordpiece_is_refused(tmp_path):
    (tmp_path / "tokenizer.json").write_text(json.dumps({"model": {"type": "BPE"}}), encoding="utf-8")
    with pytest.raises(ValueError, match="not a WordPiece"):
        PieceSplitter.load(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="not valid JSON"):
        PieceSplitter.load(tmp_path)


def test_syllables_drop_spaces_and_keep_every_character():
    assert syllables("영화 좋아 👍") == ["영", "화", "좋", "아", "👍"]


@pytest.fixture(scope="module")
def korean_model(tmp_path_factory):
    root = tmp_path_factory.mktemp("ko")
    data = write_nsmc(root / "nsmc")
    out = root / "model"
    args = ["--dataset", "nsmc", "--data", str(data), "--tokenizer", "wordpiece", "--vocab-size", "200"]
    args += ["--min-freq", "1", "--epochs", "6", "--d-model", "16", "--heads", "2", "--layers", "1", "--d-ff", "16"]
    args += ["--batch-size", "8", "--lr", "3e-3", "--eval-lens", "16,64", "--max-len", "64", "--out", str(out)]
    assert train_main(args) == 0
    return out


def test_a_korean_model_saves_its_pieces_and_reads_hangul(korean_model):
    assert (korean_model / "tokenizer.json").is_file()
    metrics = json.loads((korean_model / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["tokenizer"]["kind"] == "wordpiece" and metrics["data"]["test"] == 80
    assert metrics["metrics"]["test_accuracy"] >= 0.9  # the two classes differ in every review
    loaded = load_model(korean_model)
    assert loaded.config.tokenizer == "wordpiece"
    result = analyze(loaded, ["정말 재미없어요 최악의 영화", "재밌다 또 보고싶다 👍"])
    assert result.predicted_label(0) == "negative" and result.predicted_label(1) == "positive"
    assert any("재미" in token for token in result.tokens[0])
    assert result.tokens[1][-1] == "👍" and result.unknown[1][-1]


def test_a_korean_model_without_its_pieces_is_refused(korean_model, tmp_path):
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("config.json", "model.safetensors", "vocab.txt"):
        (copy / name).write_bytes((korean_model / name).read_bytes())
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        load_bundle(copy)
    lines = (korean_model / "vocab.txt").read_text(encoding="utf-8").split("\n")
    lines[5], lines[6] = lines[6], lines[5]
    (copy / "vocab.txt").write_text("\n".join(lines), encoding="utf-8")
    (copy / "tokenizer.json").write_bytes((korean_model / "tokenizer.json").read_bytes())
    with pytest.raises(ValueError, match="different pieces"):
        load_bundle(copy)


def test_a_korean_model_is_calibrated_on_its_own_validation_reviews(korean_model, tmp_path):
    from transformer.text.calibration import calibrate_bundle

    data = write_nsmc(tmp_path / "nsmc")
    result = calibrate_bundle(korean_model, data, dataset="nsmc")
    assert result["temperature"] > 0 and result["test_accuracy"] >= 0.9
    assert "reviews carved from train" in result["fitted_on"] and result["measured_on"] == "test (80 reviews)"
    assert sum(result["reliability_after"]["count"]) == 80


def test_a_zipped_korean_bundle_uploads_with_its_pieces(korean_model, tmp_path):
    import zipfile

    from transformer.checkpoints.recognise import read_upload_isolated

    archive = tmp_path / "korean-model.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in korean_model.iterdir():
            z.write(path, f"korean-model/{path.name}")
    uploaded = read_upload_isolated(archive)
    original = load_bundle(korean_model)
    assert uploaded.splitter is not None
    for text in TRICKY[:-1] + ["정말 재미없어요 최악의 영화"]:
        assert uploaded.text_encoder().encode(text) == original.text_encoder().encode(text)
