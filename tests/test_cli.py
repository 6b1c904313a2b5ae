"""``python -m transformer inspect``: the JSON contract of DESIGN.md and clear errors."""

import json
import subprocess
import sys

import numpy as np
import pytest

from transformer.cli.main import main


def run_cli(capsys, *args):
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_inspect_prints_the_documented_json(tiny_bundle, capsys):
    code, out, _ = run_cli(
        capsys, "inspect", "--checkpoint", str(tiny_bundle), "--text", "the movie was great", "bad", "--format", "json"
    )
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"model", "device", "inputs"}
    assert data["model"]["kind"] == "classifier" and data["model"]["format"] == "attention-lab"
    assert data["model"]["config"]["d_model"] == 16 and data["device"] == "cpu"
    first = data["inputs"][0]
    assert first["tokens"] == ["the", "movie", "was", "great"] and len(first["ids"]) == 4
    assert first["truncated"] is False
    assert first["prediction"]["label"] in ("negative", "positive")
    assert np.array(first["attention"]["encoder"]).shape == (2, 4, 4, 4)
    assert np.array(data["inputs"][1]["attention"]["encoder"]).shape == (2, 4, 1, 1)


def test_text_file_and_max_len(tiny_bundle, tmp_path, capsys):
    f = tmp_path / "in.txt"
    f.write_text("the movie was great\n\nnot good at all\n", encoding="utf-8")
    code, out, _ = run_cli(capsys, "inspect", "--checkpoint", str(tiny_bundle), "--text-file", str(f), "--max-len", "2")
    inputs = json.loads(out)["inputs"]
    assert code == 0 and len(inputs) == 2
    assert inputs[1]["tokens"] == ["not", "good"] and inputs[1]["truncated"] is True


@pytest.mark.parametrize(
    "args, message",
    [
        (["--checkpoint", "no/such/model", "--text", "hi"], "no such file"),
        (["--checkpoint", "{bundle}", "--text", "   "], "no words"),
        (["--checkpoint", "{bundle}", "--text", "hi", "--device", "cuda"], "Available devices"),
        (["--checkpoint", "{bundle}", "--text-file", "missing.txt"], "no such file"),
        (["--checkpoint", "{bundle}", "--text", "hi", "--max-len", "0"], "at least 1"),
    ],
)
def test_bad_input_exits_non_zero_with_a_message(tiny_bundle, capsys, args, message):
    args = [a.replace("{bundle}", str(tiny_bundle)) for a in args]
    code, out, err = run_cli(capsys, "inspect", *args)
    assert code != 0 and out == ""
    assert message in err and err.startswith("error:")


def test_non_utf8_text_file(tiny_bundle, tmp_path, capsys):
    f = tmp_path / "latin1.txt"
    f.write_bytes("caf\xe9 movie".encode("latin-1"))
    code, _, err = run_cli(capsys, "inspect", "--checkpoint", str(tiny_bundle), "--text-file", str(f))
    assert code == 2 and "not UTF-8" in err


def test_help_runs_as_a_module():
    done = subprocess.run([sys.executable, "-m", "transformer", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "inspect" in done.stdout and "Example" in done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "transformer", "inspect", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and "--checkpoint" in done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "transformer", "frobnicate"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "unknown command" in done.stderr
