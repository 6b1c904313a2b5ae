"""``transformer.export``: the CLI and the app's JSON download write the same document."""

import json

from transformer import analyze, load_model
from transformer.cli.export import analysis_document, analysis_json, model_block
from transformer.cli.main import main


def test_cli_prints_the_export_document(tiny_bundle, capsys):
    loaded = load_model(tiny_bundle)
    texts = ["the movie was great", "not good"]
    assert main(["inspect", "--checkpoint", str(tiny_bundle), "--text", *texts]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = json.loads(json.dumps(analysis_document(loaded, analyze(loaded, texts))))
    # the CLI runs length-sorted batches, so its padding (and float rounding) differs: the same document to 1e-5
    assert _same(printed, expected), "the CLI's document differs from the app's download"


def _same(a, b, tol: float = 1e-5) -> bool:
    """Equal JSON values, numbers within ``tol``."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= tol
    return a == b


def test_indices_choose_inputs_and_text_stays_unescaped(tiny_bundle):
    loaded = load_model(tiny_bundle)
    result = analyze(loaded, ["the movie", "영화 the film"])
    data = json.loads(analysis_json(loaded, result, [1]))
    assert [i["text"] for i in data["inputs"]] == ["영화 the film"]
    assert "영화" in analysis_json(loaded, result)  # UTF-8 kept, not \u-escaped
    assert data["model"] == json.loads(json.dumps(model_block(loaded)))
    assert data["model"]["kind"] == "classifier" and data["device"] == "cpu"
