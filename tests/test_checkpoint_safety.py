"""Uploads that must be refused with a clear message (and never run code), vocabulary forms,
zipped bundles, and the CLI on a checkpoint file."""

import builtins
import json
import os
import pickle
import zipfile

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from tests.checkpoint_references import CourseClassifier, FusedClassifier
from transformer import ImportOptions, analyze, load_bundle, load_model
from transformer.checkpoints import CheckpointError, bundle_zip, safe_load
from transformer.cli.main import main
from transformer.core.tokenizer import Vocab

WORDS = "the movie was great bad not good plot acting film boring loved it a and".split()


@pytest.fixture
def vocab() -> Vocab:
    return Vocab.build([WORDS])


@pytest.fixture
def course(tmp_path, vocab):
    """A course-notebook checkpoint and its vocab.txt."""
    torch.manual_seed(0)
    model = CourseClassifier(len(vocab), embedding_dim=16, feed_forward_dim=32, num_heads=2).eval()
    torch.save(model.state_dict(), tmp_path / "course.pt")
    return model, tmp_path / "course.pt", vocab.save(tmp_path / "vocab.txt")


class SystemCall:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class ExecCall:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (builtins.exec, (f"open({str(self.marker)!r}, 'w').write('ran')",))


@pytest.mark.parametrize("how", ["torch.save", "pickle-exec"])
def test_a_pickle_that_runs_code_is_refused_and_does_not_run(tmp_path, how):
    marker = tmp_path / "marker"
    path = tmp_path / "evil.pt"
    if how == "torch.save":
        torch.save({"encoder.w": torch.zeros(2), "payload": SystemCall(marker)}, path)
    else:
        path.write_bytes(pickle.dumps(ExecCall(marker), protocol=2))
    with pytest.raises(CheckpointError, match="Refused evil.pt") as err:
        load_model(path, "cpu", ImportOptions())
    assert "nothing in it ran" in str(err.value)
    assert ("system" if how == "torch.save" else "exec") in str(err.value)
    assert not marker.exists()


@pytest.mark.parametrize(
    "content, suffix, message",
    [
        (b"", ".pt", "is empty"),
        (b"hello, this is text", ".pt", "not a PyTorch checkpoint"),
        ("truncated", ".pt", "truncated or corrupt"),
        ("truncated", ".safetensors", "not a valid safetensors file"),
        ("list", ".pt", "holds a list, not a state_dict"),
        ("no-state", ".bin", "but no state_dict"),
        ("bert", ".bin", "no known architecture"),
        ("bare-encoder", ".pt", "no token embedding"),
    ],
)
def test_bad_files_give_a_clear_message(tmp_path, content, suffix, message):
    path = tmp_path / f"upload{suffix}"
    if content == "truncated":
        full = tmp_path / f"full{suffix}"
        tensors = {"w": torch.randn(64, 64)}
        torch.save(tensors, full) if suffix == ".pt" else save_file(tensors, str(full))
        content = full.read_bytes()[: full.stat().st_size // 2]
    elif content == "list":
        torch.save([torch.zeros(2)], path)
    elif content == "no-state":
        torch.save({"epoch": 3, "optimizer": {"lr": 0.1}}, path)
    elif content == "bert":
        torch.save({"bert.encoder.layer.0.attention.self.query.weight": torch.zeros(8, 8)}, path)
    elif content == "bare-encoder":
        torch.save(FusedClassifier(20).encoder.state_dict(), path)  # seed 000's Encoder alone: no embedding
    if isinstance(content, bytes):
        path.write_bytes(content)
    with pytest.raises(CheckpointError, match=message) as err:
        load_model(path, "cpu", ImportOptions(vocab_path=None))
    if content == "bert":
        assert "bert.encoder.layer.0.attention.self.query.weight (8, 8)" in str(err.value)


def test_size_limits(tmp_path, course, monkeypatch):
    _, path, vocab_file = course
    with pytest.raises(CheckpointError, match="the limit is 0 MB"):
        safe_load.read_checkpoint(path, max_mb=0.0001)
    monkeypatch.setattr(safe_load, "MAX_PARAMETERS", 1000)
    with pytest.raises(CheckpointError, match="at most 0M"):
        load_model(path, "cpu", ImportOptions(vocab_path=str(vocab_file)))


def test_vocabulary_must_fit_and_be_given(course, tmp_path, vocab):
    _, path, _ = course
    with pytest.raises(CheckpointError, match=r"needs a vocabulary.*get_itos"):
        load_model(path, "cpu", ImportOptions(num_heads=2))
    bigger = Vocab.build([WORDS + ["extra", "words"]])
    with pytest.raises(CheckpointError, match="upload the vocabulary this model was trained with"):
        load_model(path, "cpu", ImportOptions(vocab_path=str(bigger.save(tmp_path / "big.txt")), num_heads=2))
    (tmp_path / "nopad.txt").write_text("<unk>\nthe\nmovie\n", encoding="utf-8")
    with pytest.raises(CheckpointError, match="lacks <pad>"):
        load_model(path, "cpu", ImportOptions(vocab_path=str(tmp_path / "nopad.txt"), num_heads=2))
    with pytest.raises(CheckpointError, match="do not divide d_model = 16"):
        load_model(path, "cpu", ImportOptions(vocab_path=str(tmp_path / "vocab.txt"), num_heads=3))


@pytest.mark.parametrize("form", ["txt", "json-list", "json-dict", "itos-in-checkpoint"])
def test_vocabulary_forms(course, tmp_path, vocab, form):
    model, path, vocab_file = course
    options = ImportOptions(vocab_path=str(vocab_file), num_heads=2)
    if form == "json-list":
        (tmp_path / "v.json").write_text(json.dumps(vocab.itos), encoding="utf-8")
        options = ImportOptions(vocab_path=str(tmp_path / "v.json"), num_heads=2)
    elif form == "json-dict":
        (tmp_path / "v.json").write_text(json.dumps(vocab.stoi), encoding="utf-8")
        options = ImportOptions(vocab_path=str(tmp_path / "v.json"), num_heads=2)
    elif form == "itos-in-checkpoint":
        torch.save({"model": model.state_dict(), "itos": vocab.itos, "n_heads": 2}, path)
        options = ImportOptions()
    loaded = load_model(path, "cpu", options)
    assert loaded.vocab == vocab and loaded.config.num_heads == 2


def test_a_head_that_cannot_be_mapped_still_shows_attention(tmp_path, vocab):
    torch.manual_seed(1)
    model = CourseClassifier(len(vocab), embedding_dim=16, feed_forward_dim=32, num_heads=2).eval()
    model.classifier = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.LayerNorm(8), torch.nn.Linear(8, 1))
    torch.save(model.state_dict(), tmp_path / "m.pt")
    loaded = load_model(
        tmp_path / "m.pt", "cpu", ImportOptions(vocab_path=str(vocab.save(tmp_path / "v.txt")), num_heads=2)
    )
    assert not loaded.config.has_head
    assert any("classifier.1" in note and "could not be mapped" in note for note in loaded.notes)
    result = analyze(loaded, ["the movie was great"])
    assert result.probabilities is None and result.prediction(0) is None
    model.records.clear()
    model.encoder(torch.tensor(result.ids), torch.ones(1, 1, 4, 4, dtype=torch.bool))
    expected = torch.stack([r[0] for r in model.records]).detach().numpy()
    assert np.abs(result.attention_for(0) - expected).max() <= 1e-5


def test_safetensors_upload(tmp_path, course, vocab):
    model, _, vocab_file = course
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(tmp_path / "m.safetensors"))
    loaded = load_model(tmp_path / "m.safetensors", "cpu", ImportOptions(vocab_path=str(vocab_file), num_heads=2))
    assert loaded.format == "course-encoder" and loaded.config.d_model == 16


def zip_folder(folder, target, extra: dict[str, bytes] | None = None):
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in folder.iterdir():
            archive.write(file, f"{folder.name}/{file.name}")
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return target


def test_bundle_zip_round_trip(tiny_bundle, tmp_path):
    archive = zip_folder(tiny_bundle, tmp_path / "tiny.zip")
    loaded, direct = load_model(archive), load_bundle(tiny_bundle)
    a, b = analyze(loaded, ["the movie was great"]), analyze(direct, ["the movie was great"])
    assert loaded.config == direct.config and loaded.vocab == direct.vocab
    assert np.array_equal(a.attention, b.attention) and np.array_equal(a.probabilities, b.probabilities)


def test_bundle_zip_cannot_escape_or_explode(tiny_bundle, tmp_path, monkeypatch):
    escape = tmp_path / "outside" / "escaped.txt"
    escape.parent.mkdir()
    names = {"../outside/escaped.txt": b"x", "/tmp/absolute-escape.txt": b"x", "a/../../../outside/escaped.txt": b"x"}
    archive = zip_folder(tiny_bundle, tmp_path / "evil.zip", names)
    load_model(archive)  # the bundle still loads; the other entries are never unpacked
    assert not escape.exists() and not os.path.exists("/tmp/absolute-escape.txt")
    monkeypatch.setattr(bundle_zip, "MAX_UNPACKED_BYTES", 1000)
    with pytest.raises(CheckpointError, match="more than 0 MB"):
        load_model(archive)
    (tmp_path / "plain.zip").write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(CheckpointError, match="zip"):
        load_model(tmp_path / "plain.zip")


def test_cli_inspect_a_checkpoint_file(course, capsys):
    model, path, vocab_file = course
    code = main(
        [
            "inspect",
            "--checkpoint",
            str(path),
            "--vocab",
            str(vocab_file),
            "--heads",
            "2",
            "--text",
            "the movie was great",
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    data = json.loads(out.out)
    assert data["model"]["format"] == "course-encoder" and data["model"]["config"]["num_heads"] == 2
    first = data["inputs"][0]
    attention = np.array(first["attention"]["encoder"])
    assert first["tokens"] == ["the", "movie", "was", "great"] and attention.shape == (2, 2, 4, 4)
    model.records.clear()
    with torch.no_grad():
        logit = model(torch.tensor([first["ids"]]))
    expected = torch.stack([r[0] for r in model.records]).detach().numpy()
    assert np.abs(attention - expected).max() <= 1e-5
    assert abs(first["prediction"]["probabilities"]["positive"] - float(torch.sigmoid(logit))) <= 1e-5


def test_cli_refuses_a_malicious_file_with_a_message(tmp_path, capsys):
    torch.save({"payload": SystemCall(tmp_path / "marker")}, tmp_path / "evil.pt")
    code = main(["inspect", "--checkpoint", str(tmp_path / "evil.pt"), "--text", "hi"])
    err = capsys.readouterr().err
    assert code != 0 and err.startswith("error: Refused evil.pt")
    assert not (tmp_path / "marker").exists()


def test_a_torch_file_with_too_many_tensors_is_refused_before_unpickling(tmp_path, monkeypatch):
    import time

    import transformer.checkpoints.safe_load as safe_load
    from transformer.bundle import MAX_TENSORS
    from transformer.checkpoints import CheckpointError, read_checkpoint

    path = tmp_path / "many.pt"
    torch.save({f"t{i}": torch.zeros(1) for i in range(MAX_TENSORS + 1)}, path)
    loads = []
    monkeypatch.setattr(safe_load.torch, "load", lambda *a, **k: loads.append(1))
    start = time.perf_counter()
    with pytest.raises(CheckpointError, match=f"holds {MAX_TENSORS + 1:,} tensors; the limit is {MAX_TENSORS:,}"):
        read_checkpoint(path)
    assert loads == []  # refused from the zip's directory, nothing unpickled
    print(f"refused in {time.perf_counter() - start:.2f} s")
