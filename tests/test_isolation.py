"""Untrusted files are read in a child process with a time and a memory limit (run_isolated)."""

import time

import pytest
import torch

from transformer.checkpoints import CheckpointError
from transformer.checkpoints.isolation import run_isolated


def returns_state(n: int) -> dict:
    """A normal reader: tensors and plain values come back as they were."""
    return {"weight": torch.arange(n, dtype=torch.float32).reshape(2, -1), "hints": {"num_heads": 4, "name": "tiny"}}


def sleeps(seconds: float) -> str:
    time.sleep(seconds)
    return "woke up"


def allocates_python(megabytes: int) -> int:
    return len(bytearray(megabytes * 1024**2))


def allocates_torch(megabytes: int) -> float:
    return float(torch.ones(megabytes * 1024**2 // 4).sum())


def refuses(message: str) -> None:
    raise CheckpointError(message)


def breaks() -> None:
    raise KeyError("no such key")


def test_a_normal_reader_returns_its_result():
    result = run_isolated(returns_state, 6, time_limit_s=60)
    assert torch.equal(result["weight"], torch.tensor([[0.0, 1, 2], [3, 4, 5]]))
    assert result["hints"] == {"num_heads": 4, "name": "tiny"}


def test_a_reader_that_sleeps_is_stopped_in_time():
    run_isolated(returns_state, 2, time_limit_s=60)  # the fork server is up: time the limit alone
    start = time.monotonic()
    with pytest.raises(ValueError, match=r"took longer than 1 s"):
        run_isolated(sleeps, 30, time_limit_s=1.0, what="Reading sleepy.pt")
    assert time.monotonic() - start < 8  # 1 s limit + kill, with room for a loaded machine


@pytest.mark.parametrize("allocate", [allocates_python, allocates_torch])
def test_a_reader_that_allocates_too_much_is_stopped(allocate):
    with pytest.raises(ValueError, match=r"needed more than 200 MB of memory") as info:
        run_isolated(allocate, 2048, time_limit_s=60, memory_limit_mb=200, what="Reading huge.safetensors")
    assert str(info.value).startswith("Reading huge.safetensors needed")


def test_the_same_reader_within_its_limit_returns():
    assert run_isolated(allocates_python, 50, time_limit_s=60, memory_limit_mb=200) == 50 * 1024**2


def test_errors_raised_by_the_reader_keep_their_message():
    with pytest.raises(CheckpointError, match="^bad header: 3 tensors listed, 2 found$"):
        run_isolated(refuses, "bad header: 3 tensors listed, 2 found", time_limit_s=60)
    with pytest.raises(CheckpointError, match="KeyError: 'no such key'"):
        run_isolated(breaks, time_limit_s=60)


def test_a_checkpoint_read_in_isolation_equals_the_direct_read(tmp_path):
    from transformer.checkpoints.isolation import read_checkpoint_isolated
    from transformer.checkpoints.safe_load import read_checkpoint

    torch.manual_seed(0)
    state = {"encoder.weight": torch.randn(4, 3), "steps": torch.tensor([7])}
    torch.save({"model": state, "num_heads": 2, "itos": ["<unk>", "<pad>", "movie"]}, tmp_path / "m.pt")
    direct, isolated = read_checkpoint(tmp_path / "m.pt"), read_checkpoint_isolated(tmp_path / "m.pt")
    assert isolated.name == direct.name == "m.pt" and isolated.source == "torch.save"
    assert isolated.state.keys() == direct.state.keys()
    assert all(torch.equal(isolated.state[k], direct.state[k]) for k in direct.state)
    assert isolated.hints == direct.hints and isolated.itos == ["<unk>", "<pad>", "movie"]


def test_a_pickle_that_runs_code_is_still_refused_in_isolation(tmp_path):
    import os

    from transformer.checkpoints.isolation import read_checkpoint_isolated

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path / 'ran'}",))

    torch.save({"w": torch.zeros(2), "x": Payload()}, tmp_path / "evil.pt")
    with pytest.raises(CheckpointError, match="Refused evil.pt"):
        read_checkpoint_isolated(tmp_path / "evil.pt")
    assert not (tmp_path / "ran").exists()


def million_empty_tensors(n: int = 1_000_000) -> bytes:
    """A ~60 MB safetensors file whose header lists ``n`` empty tensors."""
    import struct

    entries = ",".join(f'"t{i}":{{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}' for i in range(n))
    raw = ("{" + entries + "}").encode()
    return struct.pack("<Q", len(raw)) + raw


def test_an_upload_of_a_million_empty_tensors_is_refused_within_2_s():
    from transformer.checkpoints import read_upload
    from transformer.checkpoints.isolation import run_isolated

    data = million_empty_tensors()
    run_isolated(returns_state, 2, time_limit_s=60)  # the fork server is up, as on a running app
    start = time.monotonic()
    with pytest.raises(CheckpointError, match="million.safetensors") as info:
        read_upload("million.safetensors", data)
    assert time.monotonic() - start <= 2.0
    assert "limit" in str(info.value)  # says which limit it broke


def test_a_zipped_bundle_upload_is_read_in_the_child_and_rebuilt_equal(tiny_bundle, tmp_path):
    import zipfile

    from transformer.bundle import load_bundle
    from transformer.checkpoints.recognise import read_upload_isolated

    target = tmp_path / "mine.zip"
    with zipfile.ZipFile(target, "w") as archive:
        for file in sorted(tiny_bundle.iterdir()):
            archive.writestr(f"{tiny_bundle.name}/{file.name}", file.read_bytes())
    loaded, reference = read_upload_isolated(target), load_bundle(tiny_bundle)
    assert loaded.vocab.itos == reference.vocab.itos and loaded.metrics == reference.metrics
    ids = torch.tensor([[2, 3, 4, 5]])
    with torch.no_grad():
        assert torch.allclose(loaded.model(ids).logits, reference.model(ids).logits, atol=1e-6)
    with pytest.raises(CheckpointError, match="needed more than 0 MB"):  # the child's limits apply to zips
        read_upload_isolated(target, memory_limit_mb=0)


def test_an_uploaded_vocabulary_is_read_in_the_child(tmp_path):
    from transformer.checkpoints.isolation import read_vocab_isolated

    path = tmp_path / "vocab.txt"
    path.write_text("<unk>\n<pad>\nthe\nfilm\n", encoding="utf-8")
    assert read_vocab_isolated(path).itos == ["<unk>", "<pad>", "the", "film"]
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    path = path.rename(tmp_path / "vocab.json")
    with pytest.raises(CheckpointError, match="nested too deeply"):
        read_vocab_isolated(path)
