"""``inspect`` on many inputs: repeated --text, a 1,000-line file, lines split on newlines only,
json and jsonl, --attention all|none, batches within their budget, records in input order."""

import json

import numpy as np
import pytest

from tests.conftest import WORDS
from tests.test_cli import run_cli
from transformer import analyze, load_model
from transformer.cli.inspect import BATCH_CELLS, FAST_BATCH_TOKENS, MAX_BATCH, batches


def test_repeated_text_flags_accumulate_in_order(tiny_bundle, capsys):
    code, out, _ = run_cli(
        capsys,
        "inspect",
        "--checkpoint",
        str(tiny_bundle),
        "--text",
        "a",
        "--text",
        "good plot",
        "movie",
        "--text",
        "b",
    )
    assert code == 0
    texts = [r["text"] for r in json.loads(out)["inputs"]]
    assert texts == ["a", "good plot", "movie", "b"]


def generated_lines(count: int) -> list[str]:
    """Lines of 1 to 40 words in a scrambled length order, so batches sort them."""
    rng = np.random.default_rng(0)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 41)))) + f" {i}" for i in range(count)]


@pytest.mark.parametrize("attention", ["none", "all"])
def test_a_thousand_line_file_gives_one_record_per_line_in_order(tiny_bundle, tmp_path, capsys, attention):
    lines = generated_lines(1000)
    path = tmp_path / "lines.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = ["inspect", "--checkpoint", str(tiny_bundle), "--text-file", str(path), "--attention", attention]
    code, out, _ = run_cli(capsys, *args, "--format", "jsonl")
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    assert len(records) == 1000
    assert [r["text"] for r in records] == lines and [r["line"] for r in records] == list(range(1, 1001))
    assert all(r["tokens"][-1] == str(i) for i, r in enumerate(records))  # each record is its own line's
    assert ("attention" in records[0]) is (attention == "all")
    if attention == "all":
        n = len(records[7]["tokens"])
        assert np.array(records[7]["attention"]["encoder"]).shape == (2, 4, n, n)
    # the predictions equal analyze() of each line on its own
    loaded = load_model(tiny_bundle)
    for i in (0, 499, 999):
        alone = analyze(loaded, [lines[i]]).prediction(0)["probabilities"]
        assert records[i]["prediction"]["probabilities"] == pytest.approx(alone, abs=1e-5)


def test_json_and_jsonl_hold_the_same_records(tiny_bundle, tmp_path, capsys):
    path = tmp_path / "in.txt"
    path.write_text("the movie\nnot good at all\nloved it\n", encoding="utf-8")
    base = ["inspect", "--checkpoint", str(tiny_bundle), "--text-file", str(path)]
    _, as_json, _ = run_cli(capsys, *base, "--format", "json")
    _, as_jsonl, _ = run_cli(capsys, *base, "--format", "jsonl")
    document = json.loads(as_json)
    assert set(document) == {"model", "device", "inputs"}
    assert document["inputs"] == [json.loads(line) for line in as_jsonl.splitlines()]
    assert document["model"]["assumptions"] == {}  # a bundle's config says everything


def test_lines_split_on_newlines_only(tiny_bundle, tmp_path, capsys):
    """U+0085, U+2028 and form feeds stay inside their line; \\r\\n ends one; blank lines are skipped."""
    content = "the movie\u0085was great\r\n\r\nnot\u2028good\n  \nbad\x0cplot\n"
    path = tmp_path / "odd.txt"
    path.write_bytes(content.encode("utf-8"))
    code, out, _ = run_cli(
        capsys, "inspect", "--checkpoint", str(tiny_bundle), "--text-file", str(path), "--format", "jsonl"
    )
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert [r["line"] for r in records] == [1, 3, 5]
    assert [r["text"] for r in records] == ["the movie\u0085was great", "not\u2028good", "bad\x0cplot"]


def test_attention_none_predicts_like_attention_all(tiny_bundle, capsys):
    texts = ["the movie was great", "not good", "a boring film and bad acting"]
    base = ["inspect", "--checkpoint", str(tiny_bundle), "--format", "jsonl", "--text", *texts]
    _, none, _ = run_cli(capsys, *base, "--attention", "none")
    _, full, _ = run_cli(capsys, *base, "--attention", "all")
    for a, b in zip(none.splitlines(), full.splitlines()):
        a, b = json.loads(a), json.loads(b)
        assert a["tokens"] == b["tokens"] and a["ids"] == b["ids"]
        assert a["prediction"]["probabilities"] == pytest.approx(b["prediction"]["probabilities"], abs=1e-5)


@pytest.mark.parametrize("attention", ["none", "all"])
def test_batches_stay_within_their_budget(attention):
    rng = np.random.default_rng(1)
    lengths = [int(n) for n in rng.integers(1, 1025, size=300)]
    groups = batches(lengths, attention, per_token2=8)
    assert sorted(i for g in groups for i in g) == list(range(300))
    for group in groups:
        longest = max(lengths[i] for i in group)
        assert len(group) <= MAX_BATCH
        if len(group) > 1:
            budget = len(group) * longest**2 * 8 <= BATCH_CELLS if attention == "all" else None
            assert budget if attention == "all" else len(group) * longest <= FAST_BATCH_TOKENS
    # sorted by length: little padding
    assert all(max(lengths[i] for i in a) <= min(lengths[i] for i in b) for a, b in zip(groups, groups[1:]))


def test_images_through_the_cli(tmp_path, capsys):
    from tests.test_vision_helpers import png_bytes, tiny_model
    from transformer.vision import save_vision_bundle

    folder = save_vision_bundle(tmp_path / "vit", tiny_model("vision-classifier").model)
    picture = (np.random.default_rng(0).random((20, 20)) * 255).astype(np.uint8)
    path = tmp_path / "p.png"
    path.write_bytes(png_bytes(picture))
    base = ["inspect", "--checkpoint", str(folder), "--image", str(path), "--image", str(path)]
    code, out, _ = run_cli(capsys, *base, "--format", "jsonl", "--attention", "none")
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(records) == 2 and "attention" not in records[0]
    assert records[0]["prediction"]["label"] in records[0]["prediction"]["probabilities"]
    code, _, err = run_cli(capsys, "inspect", "--checkpoint", str(folder), "--image", str(tmp_path / "none.png"))
    assert code == 2 and err.startswith("error:") and "none.png: no such file" in err
