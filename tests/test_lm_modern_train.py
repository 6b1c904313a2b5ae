"""The language model's training with the modern layers (rotary, RMSNorm, SwiGLU, grouped-query attention,
no biases) on a tiny English + Korean corpus the test writes, its saved state and ``--resume``."""

import gzip
import json
import random

import numpy as np
import pytest
import torch

from transformer import load_bundle
from transformer.lm.train import main as train_main
from transformer.lm.train import make_optimizer
from transformer.lm.train_state import load_state, restore

EN_WORDS = "the a movie film was great bad acting story plot loved hated good boring fun long".split()
KO_WORDS = "영화 정말 재미 없다 있다 배우 연기 최고 별로 스토리 감동 지루 좋다 나쁘다".split()


def _docs(words: list[str], count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(words) for _ in range(rng.randint(15, 30))) + " ." for _ in range(count)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """(aclImdb folder, NSMC-style .tsv.gz) with 200 short reviews each."""
    root = tmp_path_factory.mktemp("corpus")
    folders = [(split, label) for split in ("train", "test") for label in ("pos", "neg")]
    for seed, (split, label) in enumerate(folders):
        folder = root / "aclImdb" / split / label
        folder.mkdir(parents=True)
        for i, doc in enumerate(_docs(EN_WORDS, 100, seed)):
            (folder / f"{i}_{8 if label == 'pos' else 2}.txt").write_text(doc, encoding="utf-8")
    korean = root / "nsmc_style_train.tsv.gz"
    with gzip.open(korean, "wt", encoding="utf-8") as f:
        f.write("id\tdocument\tlabel\n")
        for i, doc in enumerate(_docs(KO_WORDS, 200, 7)):
            f.write(f"{i}\t{doc}\t{i % 2}\n")
    return root / "aclImdb", korean


MODERN = [
    "--positional", "rotary", "--rope-base", "500", "--norm", "rms", "--ffn", "swiglu",
    "--heads", "4", "--kv-heads", "2", "--no-bias", "--untied-output",
]  # fmt: skip


def _train(corpus, out, state, *extra) -> int:
    imdb, korean = corpus
    args = [
        "--imdb", str(imdb), "--korean", str(korean), "--out", str(out), "--state-dir", str(state),
        "--vocab-size", "300", "--d-model", "32", "--layers", "2", "--d-ff", "48", "--context", "24",
        "--batch", "4", "--warmup", "2", "--probe-every", "2", "--val-windows", "4", "--seed", "3",
        *MODERN, *extra,
    ]  # fmt: skip
    torch.set_num_threads(1)
    return train_main(args)


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory):
    root = tmp_path_factory.mktemp("run")
    assert _train(corpus, root / "model", root / "state", "--steps", "6") == 0
    return root


def test_the_bundle_has_the_chosen_layers_and_metrics_say_so(trained):
    loaded = load_bundle(trained / "model")
    config = loaded.config
    assert (config.positional, config.pe_base, config.norm_style, config.gated_ffn) == ("rotary", 500.0, "rms", True)
    assert (config.activation, config.num_heads, config.kv_heads, config.qkv_bias) == ("silu", 4, 2, False)
    layer = loaded.model.layers[0]
    assert layer.self_attn.w_k.weight.shape == (16, 32)  # 2 key/value heads of 8
    assert layer.self_attn.w_o.bias is None and layer.ffn.linear2.bias is None
    metrics = json.loads((trained / "model" / "metrics.json").read_text())
    assert metrics["steps"] == 6 and metrics["resumed_at_steps"] == []
    assert metrics["layers"]["feed_forward"] == "SwiGLU" and metrics["layers"]["kv_heads"] == 2
    assert not config.tie_output_embedding and metrics["layers"]["output_layer"] == "its own"
    assert loaded.model.output.weight.data_ptr() != loaded.model.embedding.tokens.weight.data_ptr()
    assert [p["step"] for p in metrics["induction"]["curve"]] == [0, 2, 4, 6]


def test_a_local_first_layer_is_trained_saved_and_said(corpus, tmp_path):
    assert _train(corpus, tmp_path / "model", tmp_path / "state", "--steps", "2", "--local-window", "2") == 0
    loaded = load_bundle(tmp_path / "model")
    assert (loaded.config.local_window, loaded.config.local_layers) == (2, (0,))
    metrics = json.loads((tmp_path / "model" / "metrics.json").read_text())
    assert metrics["layers"]["local_layers"] == {"layers": [0], "window": 2}
    weights = loaded.model(torch.arange(3, 13)[None], need_weights=True).attention[0].weights
    assert torch.all(weights[0, :, 5, :4] == 0) and torch.all(weights[0, :, 5, 4:6] > 0)


def test_saved_bundle_gives_the_logits_of_the_trained_state(trained):
    payload = load_state(trained / "state")
    assert payload["step"] == 6
    model, _, _, _ = restore(payload, lambda m: make_optimizer(m, 1e-3), np.random.default_rng())
    loaded = load_bundle(trained / "model").model
    ids = torch.randint(3, 300, (2, 20), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.allclose(model.eval()(ids).logits, loaded(ids).logits, atol=1e-6)


def test_a_cut_off_run_resumed_ends_with_the_weights_of_an_uninterrupted_one(corpus, trained, tmp_path, capsys):
    out, state = tmp_path / "model", tmp_path / "state"
    assert _train(corpus, out, state, "--steps", "6", "--stop-after", "3") == 0
    assert "stopped at step 3" in capsys.readouterr().out
    assert not (out / "model.safetensors").exists() and load_state(state)["step"] == 3
    assert _train(corpus, out, state, "--steps", "6", "--resume") == 0
    assert "resumed at step 3" in capsys.readouterr().out
    resumed, straight = load_bundle(out), load_bundle(trained / "model")
    for (name, a), (_, b) in zip(resumed.model.state_dict().items(), straight.model.state_dict().items()):
        assert torch.equal(a, b), name
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["resumed_at_steps"] == [3] and metrics["steps"] == 6


def test_resume_without_a_saved_state_says_what_to_do(corpus, tmp_path):
    with pytest.raises(FileNotFoundError, match="no training to resume"):
        _train(corpus, tmp_path / "m", tmp_path / "nothing", "--steps", "2", "--resume")
