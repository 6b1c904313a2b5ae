"""Broken and hostile inputs (issue 17): non-finite weights, zips with bad configs or weights,
configs beyond the caps, oversized safetensors headers, and the CLI's one-line errors."""

import json
import struct
import zipfile

import pytest
import torch

from tests.checkpoint_references import CourseClassifier
from tests.conftest import WORDS, tiny_config
from transformer import ImportOptions, analyze, load_bundle, load_model
from transformer.bundle import save_bundle
from transformer.checkpoints import CheckpointError
from transformer.cli.main import main
from transformer.core.model import SequenceClassifier
from transformer.core.tokenizer import Vocab

BROKEN = "encoder.encoder_layers.1.multi_head_attention.Wk.weight"


def strict_json(text: str):
    """json.loads that refuses NaN and Infinity, as strict parsers do."""

    def refuse(name):
        raise ValueError(f"{name} in JSON")

    return json.loads(text, parse_constant=refuse)


def run_cli(capsys, *args):
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def vocab() -> Vocab:
    return Vocab.build([WORDS])


@pytest.fixture
def nan_checkpoint(tmp_path, vocab):
    torch.manual_seed(0)
    model = CourseClassifier(len(vocab), embedding_dim=16, feed_forward_dim=32, num_heads=2)
    state = model.state_dict()
    state[BROKEN][0, 0] = float("nan")
    path = tmp_path / "diverged.pt"
    torch.save(state, path)
    return path, vocab.save(tmp_path / "vocab.txt")


def test_nan_weights_are_named_at_import_and_flagged_at_analysis(nan_checkpoint):
    path, vocab_file = nan_checkpoint
    loaded = load_model(path, "cpu", ImportOptions(vocab_path=str(vocab_file), num_heads=2))
    assert loaded.nonfinite_weights == (BROKEN,)
    assert any(BROKEN in note and "NaN" in note for note in loaded.notes)
    result = analyze(loaded, ["the movie was great", "bad"])
    assert {"attention", "logits", "probabilities"} <= set(result.nonfinite)
    assert result.weights_nonfinite == [BROKEN]
    assert result.prediction(0) is None  # no label from NaN probabilities
    record = result.input_json(0)
    strict_json(json.dumps(record))  # null, never NaN
    assert "NaN" in record["warnings"][0]


@pytest.mark.parametrize("attention", ["all", "none"])
def test_cli_writes_null_for_nan_and_names_the_tensor(nan_checkpoint, capsys, attention):
    path, vocab_file = nan_checkpoint
    args = ["inspect", "--checkpoint", str(path), "--vocab", str(vocab_file), "--heads", "2", "--text", "great plot"]
    code, out, err = run_cli(capsys, *args, "--attention", attention)
    assert code == 0 and BROKEN in err and err.startswith("warning:")
    record = strict_json(out)["inputs"][0]
    assert record["prediction"] is None and any("NaN" in w for w in record["warnings"])


def test_a_finite_model_has_no_flags(tiny_bundle):
    result = analyze(load_bundle(tiny_bundle), ["the movie"])
    assert result.nonfinite == [] and result.weights_nonfinite == []


def bundle_zip(folder, target, replace: dict[str, bytes] | None = None):
    """Zip a bundle folder, with some files' bytes replaced."""
    replace = replace or {}
    with zipfile.ZipFile(target, "w") as archive:
        for file in sorted(folder.iterdir()):
            archive.writestr(f"{folder.name}/{file.name}", replace.get(file.name, file.read_bytes()))
    return target


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("config.json", b"[1, 2, 3]", "JSON object of settings, not a list"),
        ("config.json", None, "'d_model' must be int, not str"),
        ("config.json", b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
        ("config.json", b" " * 2_000_000 + b"{}", "a bundle's config.json is a few kB"),
        ("model.safetensors", b"\x80\x04\x95" + b"pickle bytes" * 50, "not a safetensors file"),
        ("model.safetensors", "truncated", "not a safetensors file"),
    ],
)
def test_broken_zip_bundles_give_a_clear_message(tiny_bundle, tmp_path, name, content, message):
    if content is None:
        data = json.loads((tiny_bundle / "config.json").read_text())
        content = json.dumps({**data, "d_model": "64"}).encode()
    elif content == "truncated":
        content = (tiny_bundle / "model.safetensors").read_bytes()[:200]
    path = bundle_zip(tiny_bundle, tmp_path / "mine.zip", {name: content})
    with pytest.raises(CheckpointError, match=message) as caught:
        load_model(path)
    assert "mine.zip" in str(caught.value) and "/tmp" not in str(caught.value)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"d_model": 100_000, "num_heads": 4}, "d_model = 100,000 is beyond"),
        ({"max_len": 3_000_000}, "max_len = 3,000,000 is beyond"),
        ({"num_layers": 20_000}, "num_layers = 20,000 is beyond"),
        ({"vocab_size": 900_000, "d_model": 1024, "num_heads": 4}, "at most 200M"),
    ],
)
def test_config_caps_apply_before_anything_is_built(tiny_bundle, change, message):
    data = json.loads((tiny_bundle / "config.json").read_text())
    (tiny_bundle / "config.json").write_text(json.dumps({**data, **change}))
    with pytest.raises(ValueError, match=message):
        load_bundle(tiny_bundle)


def test_config_shapes_are_compared_with_the_weights_header_first(tiny_bundle):
    data = json.loads((tiny_bundle / "config.json").read_text())
    (tiny_bundle / "config.json").write_text(json.dumps({**data, "d_ff": 48}))
    with pytest.raises(ValueError, match=r"do not fit config.json.*linear1.weight \(32, 16\) \(config: \(48, 16\)\)"):
        load_bundle(tiny_bundle)


def empty_tensors_file(path, count: int):
    header = {f"t{i}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]} for i in range(count)}
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)
    return path


@pytest.mark.parametrize(("count", "message"), [(1_000_000, "-byte header; the limit"), (30_000, "declares 30,000")])
def test_safetensors_with_too_many_tensors_is_refused_before_parsing(tmp_path, count, message):
    path = empty_tensors_file(tmp_path / "many.safetensors", count)
    with pytest.raises(CheckpointError, match=message):
        load_model(path)


def mismatched_bundle(tmp_path, vocab):
    """A bundle whose weights were saved from a model with another d_ff than its config says."""
    config = tiny_config(vocab_size=len(vocab), pad_id=vocab.pad_id)
    folder = save_bundle(tmp_path / "mismatch", SequenceClassifier(config.replace(d_ff=24)), config, vocab)
    return folder


def test_cli_errors_are_one_line_with_exit_2(tmp_path, tiny_bundle, vocab, capsys):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    ckpt = tmp_path / "model.pt"
    torch.save(CourseClassifier(len(vocab), embedding_dim=16, feed_forward_dim=32).state_dict(), ckpt)
    bad_type = tmp_path / "typed"
    bad_type.mkdir()
    for f in tiny_bundle.iterdir():
        (bad_type / f.name).write_bytes(f.read_bytes())
    (bad_type / "config.json").write_text(
        json.dumps({**json.loads((tiny_bundle / "config.json").read_text()), "d_model": "16"})
    )
    cases = [
        (["--checkpoint", str(mismatched_bundle(tmp_path, vocab))], "do not fit config.json"),
        (["--checkpoint", str(ckpt), "--vocab", str(tmp_path)], "is a folder"),
        (["--checkpoint", str(ckpt), "--vocab", str(deep)], "nested too deeply"),
        (["--checkpoint", str(bad_type)], "'d_model' must be int"),
        (["--checkpoint", str(empty_tensors_file(tmp_path / "m.safetensors", 30_000))], "declares 30,000"),
    ]
    for args, message in cases:
        code, out, err = run_cli(capsys, "inspect", *args, "--text", "good")
        assert code == 2 and out == "", args
        assert err.startswith("error:") and message in err and err.count("\n") == 1, err
        assert "Traceback" not in err


def test_cli_says_target_is_ignored_on_a_classifier(tiny_bundle, capsys):
    code, out, err = run_cli(capsys, "inspect", "--checkpoint", str(tiny_bundle), "--text", "good", "--target", "x")
    assert code == 0 and "--target ignored" in err and "classifier" in err
    assert len(json.loads(out)["inputs"]) == 1


def test_upload_messages_name_the_users_file_not_a_temporary_folder(tiny_bundle, tmp_path):
    from transformer.checkpoints import read_upload

    data = bundle_zip(tiny_bundle, tmp_path / "x.zip", {"config.json": b"[]"}).read_bytes()
    with pytest.raises(CheckpointError) as caught:
        read_upload("my model.zip", data)
    assert "my_model.zip" in str(caught.value) and "/tmp" not in str(caught.value)
    with pytest.raises(CheckpointError) as caught:
        read_upload("weights.safetensors", b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}")
    assert "weights.safetensors" in str(caught.value) and "/tmp" not in str(caught.value)
