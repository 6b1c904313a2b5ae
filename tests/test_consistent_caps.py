"""The page and the CLI give the same answer for the same file: one check for every cap (tensor
sizes the archive declares, the maximum length, the sinusoid base), a message where a recognised
file cannot be used, and no server temporary folder in any message."""

from __future__ import annotations

import io
import zipfile

import pytest
import torch

from tests.test_page_checkpoints import WORDS, course_bytes, open_page, shown, widget
from transformer.checkpoints import read_upload, read_vocab_upload
from transformer.checkpoints.questions import RANGES
from transformer.cli.main import main
from transformer.core.tokenizer import Vocab

VOCAB = "".join(t + "\n" for t in Vocab.build([WORDS]).itos).encode()


def stride0_bomb() -> bytes:
    """A 1.7 kB torch.save file whose one tensor claims 14,000 × 14,000 half floats (a stride-0 view)."""
    buffer = io.BytesIO()
    torch.save({"embedding.weight": torch.zeros(1, dtype=torch.float16).as_strided((14000, 14000), (0, 0))}, buffer)
    return buffer.getvalue()


def deflated_archive() -> bytes:
    """A torch.save zip rewritten with compressed entries: 120 MB of zeros in ~0.1 MB."""
    buffer = io.BytesIO()
    torch.save({"w": torch.zeros(30_000_000)}, buffer)
    source, out = zipfile.ZipFile(io.BytesIO(buffer.getvalue())), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for name in source.namelist():
            target.writestr(name, source.read(name))
    return out.getvalue()


def cli_error(tmp_path, name: str, data: bytes, capsys, *flags: str) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    (tmp_path / "vocab.txt").write_bytes(VOCAB)
    argv = ["inspect", "--checkpoint", str(path), "--vocab", str(tmp_path / "vocab.txt"), *flags, "--text", "hi"]
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("error: ") and len(err.splitlines()) == 1, err
    return err[len("error: ") :]


def page_errors(name: str, data: bytes, vocab: bool = True):
    at = open_page()
    at.file_uploader(key="ckpt_file").set_value((name, data, "application/octet-stream"))
    if vocab:
        at.file_uploader(key="ckpt_vocab").set_value(("vocab.txt", VOCAB, "text/plain"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at, [shown(e) for e in at.error]


@pytest.mark.parametrize(
    ("name", "make", "words"),
    [
        ("stride0_fp16_bomb.pt", stride0_bomb, "claims 14,000 × 14,000 torch.float16 values (392 MB)"),
        ("deflated.pt", deflated_archive, "declares 120 MB of tensor data inside a 0.1 MB file"),
    ],
)
def test_declared_sizes_are_refused_early_with_the_same_message(tmp_path, capsys, name, make, words):
    data = make()
    message = cli_error(tmp_path, name, data, capsys)
    assert words in message
    at, errors = page_errors(name, data)
    assert errors == [message] and not any(b.key == "ckpt_use" for b in at.button)
    with pytest.raises(ValueError) as info:  # what the page calls, in its child process
        read_upload(name, data)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("saved", "message"),
    [
        (
            {"max_len": 3_000_000},
            f"The maximum length 3,000,000 is beyond this app's limit of {RANGES['max_len'][1]:,}.",
        ),
        ({"pe_base": 5e9}, "The sinusoid base must be between 1.01 and 1e+09, not 5e+09."),
    ],
)
def test_a_saved_value_beyond_a_cap_is_refused_on_both_paths(tmp_path, capsys, saved, message):
    data = course_bytes(saved)
    assert cli_error(tmp_path, "bad_hints.pt", data, capsys, "--heads", "2") == message
    at, errors = page_errors("bad_hints.pt", data)
    assert errors == [message] and not any(b.key == "ckpt_use" for b in at.button)


def test_the_page_widgets_take_the_cli_ranges():
    at, _ = page_errors("plain.pt", course_bytes({"max_len": 5000}))
    box = widget(at, "number_input", "Maximum length")
    assert (box.min, box.max, box.value) == (RANGES["max_len"][0], RANGES["max_len"][1], 5000)
    base = widget(at, "number_input", "Sinusoid base")
    assert (base.min, base.max) == tuple(float(x) for x in RANGES["pe_base"])


def test_a_bad_padding_id_saved_in_the_file_is_said_before_the_button(tmp_path, capsys):
    data = course_bytes({"pad_idx": 999})
    message = cli_error(tmp_path, "bad_pad.pt", data, capsys, "--heads", "2")
    assert "padding id 999 is outside the vocabulary" in message
    _, errors = page_errors("bad_pad.pt", data)
    assert errors and errors[0].startswith(message)


def test_nan_weights_are_named_before_the_model_is_used():
    at, errors = page_errors("nan_head.pt", course_bytes(nan=True))
    assert not errors and any(b.key == "ckpt_use" for b in at.button)
    assert any("Wq.weight" in shown(w) and "NaN" in shown(w) for w in at.warning)


@pytest.mark.parametrize("data", [b'{"a": 5}', b"7", b"[1, 2"])
def test_vocabulary_messages_never_name_the_server_folder(data):
    with pytest.raises(ValueError) as info:
        read_vocab_upload("vocab.json", data)
    assert "/tmp" not in str(info.value) and "upload-" not in str(info.value)
    assert str(info.value).startswith("vocab.json") and "vocab.json: vocab.json" not in str(info.value)
