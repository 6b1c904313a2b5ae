"""IMDB loading from a folder and from a .tar.gz fixture in the published layout; the split."""

import io
import random
import tarfile
import urllib.error
from collections import Counter

import pytest

from transformer.datasets import imdb as data
from transformer.datasets.imdb import Example, default_imdb_path, download_imdb, load_imdb, train_val_split

# (split, label folder, file name, text)
REVIEWS = [
    ("train", "pos", "10_9.txt", "A great film.<br /><br />Loved it!"),
    ("train", "pos", "2_8.txt", "정말 좋았어요 😀"),
    ("train", "neg", "7_1.txt", 'Awful. "Boring" (very).'),
    ("train", "neg", "11_3.txt", "Not good; not bad: meh"),
    ("train", "neg", "3_2.txt", "עברית וערבית العربية"),
    ("test", "pos", "0_10.txt", "Wonderful."),
    ("test", "neg", "0_4.txt", "Dull."),
]


def write_imdb_folder(root):
    """aclImdb/ under ``root`` with REVIEWS plus the files the loader must ignore."""
    top = root / "aclImdb"
    for split, label, name, text in REVIEWS:
        folder = top / split / label
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    (top / "README").write_text("fixture")
    (top / "imdb.vocab").write_text("the\nmovie\n")
    (top / "train" / "unsup").mkdir()
    (top / "train" / "unsup" / "5_0.txt").write_text("unlabelled")
    (top / "train" / "labeledBow.feat").write_text("0:1")
    return top


@pytest.fixture
def imdb_folder(tmp_path):
    return write_imdb_folder(tmp_path / "extracted")


@pytest.fixture
def imdb_tar(tmp_path, imdb_folder):
    path = tmp_path / "aclImdb_v1.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.add(imdb_folder, arcname="aclImdb")
    return path


def test_folder_reads_labels_and_text(imdb_folder):
    train = load_imdb(imdb_folder, "train")
    # negatives first, then positives, each by review id; unsup and .feat ignored
    assert train == [
        Example("עברית וערבית العربية", 0),
        Example('Awful. "Boring" (very).', 0),
        Example("Not good; not bad: meh", 0),
        Example("정말 좋았어요 😀", 1),
        Example("A great film.<br /><br />Loved it!", 1),
    ]
    assert load_imdb(imdb_folder, "test") == [Example("Dull.", 0), Example("Wonderful.", 1)]


def test_parent_folder_and_archive_give_the_same_examples(imdb_folder, imdb_tar):
    for split in ("train", "test"):
        expected = load_imdb(imdb_folder, split)
        assert load_imdb(imdb_folder.parent, split) == expected
        assert load_imdb(imdb_tar, split) == expected
        assert load_imdb(str(imdb_tar), split) == expected


def test_archive_is_read_without_extracting(tmp_path, imdb_tar):
    before = sorted(p.name for p in tmp_path.iterdir())
    load_imdb(imdb_tar, "train")
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_missing_path_says_where_to_get_the_data(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        load_imdb(tmp_path / "nope.tar.gz", "train")
    assert data.IMDB_URL in str(err.value) and "--data" in str(err.value)


def test_folder_without_layout(tmp_path):
    (tmp_path / "something").mkdir()
    with pytest.raises(ValueError) as err:
        load_imdb(tmp_path / "something", "train")
    assert data.IMDB_URL in str(err.value) and "--data" in str(err.value)


def test_archive_without_layout(tmp_path):
    path = tmp_path / "other.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("other/readme.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    with pytest.raises(ValueError, match="aclImdb layout"):
        load_imdb(path, "train")


def test_file_that_is_not_an_archive(tmp_path):
    path = tmp_path / "reviews.csv"
    path.write_text("text,label\n")
    with pytest.raises(ValueError, match="neither a folder nor a tar archive"):
        load_imdb(path, "train")


def test_truncated_archive(tmp_path, imdb_tar):
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(imdb_tar.read_bytes()[:-40])
    with pytest.raises(ValueError, match="--data"):
        load_imdb(broken, "train")


def test_unknown_split(imdb_folder):
    with pytest.raises(ValueError, match="split"):
        load_imdb(imdb_folder, "unsup")


# ---- default path -----------------------------------------------------------------------


def test_default_path_from_environment(monkeypatch, imdb_tar):
    monkeypatch.setenv(data.ENV_VAR, str(imdb_tar))
    assert default_imdb_path() == imdb_tar


def test_default_path_environment_points_nowhere(monkeypatch, tmp_path):
    monkeypatch.setenv(data.ENV_VAR, str(tmp_path / "missing.tar.gz"))
    with pytest.raises(FileNotFoundError, match=data.ENV_VAR):
        default_imdb_path()


def test_default_path_candidates(monkeypatch, tmp_path, imdb_tar):
    monkeypatch.delenv(data.ENV_VAR, raising=False)
    monkeypatch.setattr(data, "_DEFAULT_CANDIDATES", (tmp_path / "a.tar.gz", imdb_tar))
    assert default_imdb_path() == imdb_tar
    monkeypatch.setattr(data, "_DEFAULT_CANDIDATES", (tmp_path / "a.tar.gz",))
    with pytest.raises(FileNotFoundError) as err:
        default_imdb_path()
    assert data.IMDB_URL in str(err.value) and "--data" in str(err.value)


# ---- split ------------------------------------------------------------------------------


def make_examples(n_neg=300, n_pos=100):
    return [Example(f"review {i}", 0) for i in range(n_neg)] + [
        Example(f"review {i}", 1) for i in range(n_neg, n_neg + n_pos)
    ]


def test_split_sizes_and_stratification():
    examples = make_examples()
    train, val = train_val_split(examples, 0.1, seed=0)
    assert Counter(ex.label for ex in val) == {0: 30, 1: 10}
    assert Counter(ex.label for ex in train) == {0: 270, 1: 90}
    assert sorted(train + val, key=examples.index) == examples  # disjoint, nothing lost


def test_split_keeps_input_order():
    examples = make_examples()
    train, val = train_val_split(examples, 0.25, seed=3)
    for part in (train, val):
        positions = [examples.index(ex) for ex in part]
        assert positions == sorted(positions)


def test_split_is_deterministic_and_seeded():
    examples = make_examples()
    assert train_val_split(examples, 0.2, 7) == train_val_split(examples, 0.2, 7)
    assert train_val_split(examples, 0.2, 7)[1] != train_val_split(examples, 0.2, 8)[1]


def test_split_does_not_depend_on_input_order():
    examples = make_examples()
    shuffled = examples[:]
    random.Random(0).shuffle(shuffled)
    assert set(train_val_split(examples, 0.2, 1)[1]) == set(train_val_split(shuffled, 0.2, 1)[1])


def test_split_edge_fractions():
    examples = make_examples(3, 2)
    assert train_val_split(examples, 0.0, 0) == (examples, [])
    with pytest.raises(ValueError, match="val_fraction"):
        train_val_split(examples, 1.0, 0)
    with pytest.raises(ValueError, match="val_fraction"):
        train_val_split(examples, -0.1, 0)


def test_block_split_takes_whole_runs_of_neighbours():
    """Reviews of one film sit next to each other in id order: a run of them goes to one side whole."""
    examples = make_examples(300, 100)
    train, val = train_val_split(examples, 0.1, seed=0, block=10)
    assert Counter(ex.label for ex in val) == {0: 30, 1: 10}
    positions = sorted(examples.index(ex) for ex in val)
    starts = [i for i in positions if i - 1 not in positions]
    assert len(starts) <= 4 and all(i % 10 == 0 for i in starts)  # 3 + 1 whole runs, each on a block edge
    assert sorted(train + val, key=examples.index) == examples
    assert train_val_split(examples, 0.1, 0, 10) != train_val_split(examples, 0.1, 1, 10)
    with pytest.raises(ValueError, match="block"):
        train_val_split(examples, 0.1, 0, 0)


# ---- download (never touches the network) -------------------------------------------------


def test_download_failure_is_explained_and_leaves_nothing(monkeypatch, tmp_path):
    def offline(url, timeout):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(data.urllib.request, "urlopen", offline)
    with pytest.raises(ConnectionError) as err:
        download_imdb(tmp_path)
    assert data.IMDB_URL in str(err.value) and "--data" in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_download_writes_the_archive(monkeypatch, tmp_path, imdb_tar):
    payload = imdb_tar.read_bytes()
    monkeypatch.setattr(data.urllib.request, "urlopen", lambda url, timeout: io.BytesIO(payload))
    dest = tmp_path / "downloads"
    dest.mkdir()
    path = download_imdb(dest)
    assert path == dest / "aclImdb_v1.tar.gz" and path.read_bytes() == payload
    assert load_imdb(path, "test") == [Example("Dull.", 0), Example("Wonderful.", 1)]
